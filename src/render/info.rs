//! `:info`'s view: what the GPU's compiler made of a kernel (registers, shared and local memory,
//! the largest block) and the occupancy that leaves for a block size.

use comfy_table::{ColumnConstraint, Table};

use super::Style;
use crate::backend::gpu::protocol::KernelInfo;

/// `:info`'s table: one row per resource, then the occupancy for the block size.
pub fn info_table(kernel: &str, i: &KernelInfo, style: &Style) -> Table {
    let mut t = super::fitted_table(style.width);
    t.set_header([style.bold(kernel), String::new()]);
    let bytes = |n: i32| if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") };
    t.add_row(["registers per thread".to_string(), i.registers.to_string()]);
    t.add_row(["shared memory per block (static)".to_string(), bytes(i.shared_bytes)]);
    let local = bytes(i.local_bytes);
    let local = if i.local_bytes > 0 { style.warn(&format!("{local}, slow (spills or arrays)")) } else { local };
    t.add_row(["local memory per thread".to_string(), local]);
    t.add_row(["max threads per block".to_string(), i.max_threads_per_block.to_string()]);
    let occupancy = if i.active_blocks_per_sm <= 0 {
        style.error(&format!("cannot launch (at most {})", i.max_threads_per_block))
    } else {
        let blocks = if i.active_blocks_per_sm == 1 { "block" } else { "blocks" };
        format!(
            "{:.0}%: {} {blocks} per SM, {} of {} warps",
            i.occupancy() * 100.0,
            i.active_blocks_per_sm,
            i.active_warps(),
            i.max_warps()
        )
    };
    t.add_row([format!("occupancy at {} threads per block", i.block_size), occupancy]);
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(ColumnConstraint::ContentWidth);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel_info() -> KernelInfo {
        KernelInfo {
            registers: 16,
            shared_bytes: 1024,
            local_bytes: 0,
            max_threads_per_block: 1024,
            block_size: 256,
            active_blocks_per_sm: 6,
            max_threads_per_sm: 2048,
        }
    }

    #[test]
    fn info_shows_resources_and_occupancy() {
        let text = info_table("add_half", &kernel_info(), &Style::plain()).to_string();
        for want in [
            "registers per thread",
            "16",
            "1024 bytes",
            "0 bytes",
            "occupancy at 256 threads per block",
            "75%: 6 blocks per SM, 48 of 64 warps",
        ] {
            assert!(text.contains(want), "{want}:\n{text}");
        }
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn info_warns_of_spills_and_impossible_blocks() {
        let i = KernelInfo { local_bytes: 48, block_size: 2048, active_blocks_per_sm: 0, ..kernel_info() };
        let text = info_table("k", &i, &Style::plain()).to_string();
        assert!(text.contains("48 bytes, slow (spills or arrays)"), "{text}");
        assert!(text.contains("cannot launch (at most 1024)"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }
}
