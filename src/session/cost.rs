//! What launches cost on a real GPU, at the prompt: the `cost` statement, which binds a record
//! of the cost model's figures for checks and scripts, and `:profile`, the per-line table.
//!
//! The figures come from the simulator's cost model (`backend::sim::cost`). On the GPU backend
//! `cost` measures the time on the device and takes the other fields from the model, run on a
//! copy of the same inputs.

use std::io::{self, Write};

use crate::render::listing::{Listing, write_listing};

use super::{Session, Status};
use crate::backend::sim::{Schedule, SimConfig};
use crate::backend::{LaunchBuffers, LaunchReport, LaunchSpec};
use crate::buffer::Buffer;
use crate::cost::{self, CostReport};
use crate::diag::Span;
use crate::diag::text::thousands;
use crate::script::ast::Launch;
use crate::value::Value;

/// The fields of a cost record, in the order they are shown. Lessons and course checks read
/// these names (`expect c.atomics <= 64`): keep them.
pub const FIELDS: &[(&str, &str)] = &[
    ("time_us", "estimated time on the reference GPU, microseconds (measured, on the GPU backend)"),
    ("dram_bytes", "bytes moved to and from DRAM"),
    ("sectors_per_request", "32-byte sectors per global load or store request (4 is ideal for f32)"),
    ("bank_conflicts", "shared-memory wavefronts beyond the fewest the requests needed"),
    ("atomics", "atomic operations executed (one per active lane)"),
    ("simt_efficiency", "active lanes per issued warp instruction, 0 to 1"),
    ("occupancy", "resident warps per SM over the most it holds (theoretical), 0 to 1"),
    ("warp_steps", "simulated warp steps (one instruction for one warp)"),
];

fn field_values(c: &CostReport, time_us: f64) -> Vec<Value> {
    let t = &c.totals;
    vec![
        Value::Float(round(time_us, 3)),
        Value::Int(t.dram_bytes() as i128),
        Value::Float(round(t.sectors_per_request(), 3)),
        Value::Int(t.bank_conflicts() as i128),
        Value::Int(t.atomics as i128),
        Value::Float(round(t.simt_efficiency(), 4)),
        Value::Float(round(c.occupancy.theoretical, 4)),
        Value::Int(c.warp_steps as i128),
    ]
}

fn round(x: f64, places: i32) -> f64 {
    let p = 10f64.powi(places);
    (x * p).round() / p
}

impl Session {
    /// The GPU estimates are for: the one named with `:reference`/`--gpu-profile`, else the GPU
    /// this session runs on when the model knows it, else an H100.
    pub(super) fn reference(&self) -> &'static cost::GpuProfile {
        if !self.options.gpu_profile_chosen
            && let Some(g) = self.backends.gpu_info()
            && let Some(p) = cost::profiles::matching(&g.info().name)
        {
            return p;
        }
        self.options.gpu_profile
    }

    /// On a GPU, the register count its compiler chose for the kernel replaces the simulator's
    /// estimate in the occupancy and the estimated time (the figure `:info` shows). Without a
    /// GPU, or when the GPU cannot say, the estimate stands.
    pub(super) fn use_compiler_registers(&mut self, spec: &LaunchSpec, report: &mut LaunchReport) {
        let Some(cost) = report.cost.as_mut() else { return };
        let Ok(block) = u32::try_from(spec.block.count()) else { return };
        let Some(gpu) = self.active_gpu() else { return };
        if let Ok(info) = gpu.kernel_info(&spec.kernel, block)
            && let Ok(registers) = u32::try_from(info.registers)
            && registers > 0
        {
            cost.with_compiler_registers(registers, spec.grid.count());
        }
    }

    /// Run a launch on copies of `inputs` on the simulator with the cost model on, with the
    /// GPU compiler's registers where there is a GPU.
    fn costed_copy(
        &mut self,
        spec: &LaunchSpec,
        inputs: &[(String, Buffer)],
    ) -> Result<(LaunchReport, Vec<Buffer>), crate::backend::BackendError> {
        let (mut report, copies) = self.run_copy(spec, inputs, self.costing_config())?;
        self.use_compiler_registers(spec, &mut report);
        Ok((report, copies))
    }

    /// A sim configuration that counts costs: the session's, on a schedule that runs warps as a
    /// GPU does (the sequential schedule runs one lane at a time).
    fn costing_config(&self) -> SimConfig {
        let mut config = SimConfig { trace_writes: false, watch: None, ..self.backends.sim_config().clone() };
        if config.schedule == Schedule::Sequential {
            config.schedule = Schedule::Random;
        }
        config.cost = Some(self.reference());
        config
    }

    /// `[let NAME =] cost K<<<...>>>(...)`.
    pub(super) fn cost_statement(
        &mut self,
        name: Option<(String, Span)>,
        launch: &Launch,
        text: &str,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let style = self.options.style.clone();
        let launches = self.record.launch_count();
        // Waited for, whatever the caller pipelines: its line goes out above the cost's record.
        let pipelining = std::mem::replace(&mut self.pipelining, false);
        let status = self.launch(launch, text, out);
        self.pipelining = pipelining;
        let status = status?;
        // The launch's results and "before" are read below: bring them back from the GPU now.
        self.last_settled(out)?;
        let Some(last) = self.record.last().filter(|_| status == Status::Ok && self.record.launch_count() > launches)
        else {
            writeln!(out, "{}", style.warn("cost: nothing bound: the launch did not run"))?;
            return Ok(Status::Error);
        };
        if last.report.aborted {
            writeln!(out, "{}", style.warn("cost: nothing bound: the launch was stopped before it finished its work"))?;
            return Ok(Status::Error);
        }
        let spec = last.spec.clone();
        let before = last.before.clone();
        let on_gpu = self.on_gpu();
        let model = match self.record.last().and_then(|l| l.report.cost.clone()) {
            Some(c) if !on_gpu => c,
            _ => match self.costed_copy(&spec, &before) {
                Ok((report, _)) if !report.aborted && report.cost.is_some() => report.cost.expect("checked"),
                Ok(_) => {
                    writeln!(out, "{}", style.warn("cost: nothing bound: the simulator could not finish the launch"))?;
                    return Ok(Status::Error);
                }
                Err(e) => {
                    writeln!(out, "{} cost: the simulator could not run the launch: {e}", style.error("error:"))?;
                    return Ok(Status::Error);
                }
            },
        };
        // The launch's cost, kept with it: a failed check on a field says why from it (the
        // costliest line) when the launch itself ran without the cost model.
        if let Some(last) = self.record.last_mut()
            && last.report.cost.is_none()
        {
            last.report.cost = Some(model.clone());
        }
        let measured = if on_gpu { self.gpu_median_us(&spec, &before) } else { None };
        let time_us = measured.unwrap_or(model.estimate.time_us);
        let label = name.as_ref().map_or("cost", |(n, _)| n.as_str()).to_string();
        let values = field_values(&model, time_us);
        if let Some((n, _)) = &name {
            self.unbind_record(n);
            for ((field, _), v) in FIELDS.iter().zip(&values) {
                self.work.push_scalar(format!("{n}.{field}"), v.clone());
            }
        }
        self.write_record(out, &label, &spec, &model, &values, measured.is_some())?;
        Ok(Status::Ok)
    }

    /// The median kernel time of the launch on the GPU, in microseconds: of five runs, or for a
    /// kernel under a millisecond of fifty more after those.
    fn gpu_median_us(&mut self, spec: &LaunchSpec, inputs: &[(String, Buffer)]) -> Option<f64> {
        let mut copies: Vec<Buffer> = inputs.iter().map(|(_, b)| b.clone()).collect();
        let lb = LaunchBuffers {
            names: inputs.iter().map(|(n, _)| n.clone()).collect(),
            buffers: copies.iter_mut().collect(),
        };
        let gpu = self.backends.gpu()?;
        let median = |mut ms: Vec<f32>| {
            ms.sort_by(f32::total_cmp);
            ms.get(ms.len() / 2).map(|m| *m as f64 * 1e3)
        };
        let (ms, _) = gpu.time(spec, &lb, 5).ok()?;
        let first = median(ms)?;
        // A short kernel's first runs meet a cold GPU (its clocks still rising, caches empty),
        // and two kernels 5% apart can swap places: time one that takes under a millisecond
        // 50 more times, about as long as one slow launch, and take the median of those.
        if first < 1000.0
            && let Ok((ms, _)) = gpu.time(spec, &lb, 50)
        {
            return median(ms);
        }
        Some(first)
    }

    /// Forget a record's fields (before `let NAME = ...` binds the name anew).
    pub(super) fn unbind_record(&mut self, name: &str) {
        let prefix = format!("{name}.");
        self.work.remove_scalars(|n| n.starts_with(&prefix));
    }

    /// The fields of the record `name`, if there is one.
    pub(super) fn record(&self, name: &str) -> Vec<(String, Value)> {
        let prefix = format!("{name}.");
        self.work.scalars().iter().filter(|(n, _)| n.starts_with(&prefix)).cloned().collect()
    }

    fn write_record(
        &mut self,
        out: &mut dyn Write,
        label: &str,
        spec: &LaunchSpec,
        c: &CostReport,
        values: &[Value],
        measured: bool,
    ) -> io::Result<()> {
        let style = &self.options.style.clone();
        let whence = if measured {
            format!("time measured on this GPU; the rest from the simulator's model of {}", c.profile.title)
        } else {
            format!("estimated for {}", c.profile.title)
        };
        let config = crate::render::launch::config_written(spec, self.syntax_of(&spec.kernel));
        let head = format!("{label} = cost of {}{config}", spec.kernel);
        // Too long for the screen: where the figures come from goes on the next line, whole,
        // rather than the terminal cutting the GPU's name in two.
        if head.chars().count() + whence.chars().count() + 3 > style.width {
            writeln!(out, "{head}\n  {}", crate::diag::wrap(&format!("({whence})"), style.width, 2))?;
        } else {
            writeln!(out, "{head} ({whence})")?;
        }
        for ((field, _), v) in FIELDS.iter().zip(values) {
            let shown = match v {
                Value::Int(i) => thousands(*i as u128),
                Value::Float(f) => format!("{f}"),
                other => format!("{other:?}"),
            };
            writeln!(out, "  {label}.{field:<20} {shown:>14}")?;
        }
        writeln!(out, "{}", style.dim(&crate::render::prose(&crate::render::cost::explain(c), style)))?;
        if c.inputs_in_l2 && c.totals.dram_read == 0 && !std::mem::replace(&mut self.record.l2_note_said, true) {
            let note = format!(
                "{label}.dram_bytes is only what is written back: the launch's buffers fit in the {}'s L2 ({}) and start there, as after the host copies them in, so no read comes from DRAM; data larger than the L2 is read from DRAM too",
                c.profile.title,
                crate::diag::text::decimal_bytes(c.profile.l2_bytes as f64)
            );
            writeln!(out, "{}", style.dim(&crate::render::prose(&note, style)))?;
        }
        Ok(())
    }

    /// Show the record `name` (typed alone at the prompt).
    pub(super) fn show_record(&self, name: &str, out: &mut dyn Write) -> io::Result<bool> {
        let fields = self.record(name);
        if fields.is_empty() {
            return Ok(false);
        }
        writeln!(out, "{name} = a cost record:")?;
        for (n, v) in fields {
            let shown = match v {
                Value::Int(i) => thousands(i.max(0) as u128),
                Value::Float(f) => format!("{f}"),
                other => format!("{other:?}"),
            };
            writeln!(out, "  {n:<28} {shown:>14}")?;
        }
        Ok(true)
    }

    /// `:profile K<<<...>>>(...)`: the launch on a copy of its buffers, line by line.
    pub(crate) fn profile_view(&mut self, args: &str, out: &mut dyn Write) -> io::Result<Status> {
        let text = args.trim();
        if text.is_empty() {
            return self.view_error(out, "which launch? e.g. `:profile add_half<<<4, 256>>>(a, len(a))`");
        }
        let Some(p) = self.prepare_text("profile", text, out)? else { return Ok(Status::Error) };
        let inputs = self.inputs(&p.names);
        let report = match self.costed_copy(&p.spec, &inputs) {
            Ok((report, _)) => report,
            Err(e) => return self.backend_error(out, &e),
        };
        let Some(c) = report.cost.filter(|_| !report.aborted) else {
            writeln!(
                out,
                "{}",
                self.options.style.warn("the launch was stopped before it finished: nothing to profile")
            )?;
            crate::render::findings::write_findings(out, &report.findings, self.work.sources(), &self.options.style)?;
            return Ok(Status::Error);
        };
        crate::render::profile::write_profile(out, &p.text, &c, self.work.sources(), &self.options.style)?;
        Ok(Status::Ok)
    }

    /// Under `:compare`: the two launches' estimated times on the reference GPU, side by side.
    pub(super) fn write_estimates_side_by_side(
        &mut self,
        out: &mut dyn Write,
        a: &super::views::Prepared,
        b: &super::views::Prepared,
    ) -> io::Result<()> {
        // With the findings of the run that was costed: a faster kernel whose results are
        // wrong is not faster at anything.
        let mut estimate = |p: &super::views::Prepared| {
            let inputs = self.inputs(&p.names);
            self.costed_copy(&p.spec, &inputs).ok().and_then(|(r, _)| {
                let mut kinds: Vec<&'static str> = r.findings.iter().map(|f| f.kind().words()).collect();
                kinds.dedup();
                r.cost.filter(|_| !r.aborted).map(|c| (c, kinds))
            })
        };
        let (Some((ca, fa)), Some((cb, fb))) = (estimate(a), estimate(b)) else { return Ok(()) };
        let (ta, tb) = (ca.estimate.time_us, cb.estimate.time_us);
        let verdict = if (ta / tb - 1.0).abs() < 0.1 {
            "about the same".to_string()
        } else if ta < tb {
            format!("the left one {:.1}x faster", tb / ta)
        } else {
            format!("the right one {:.1}x faster", ta / tb)
        };
        let wrong = |side: &str, kinds: &[&str]| {
            (!kinds.is_empty()).then(|| {
                let article = if kinds[0].starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
                format!("the {side} one is wrong ({article} {} finding), so its results cannot be trusted and its speed does not count", kinds.join(" and "))
            })
        };
        let warnings: Vec<String> = [wrong("left", &fa), wrong("right", &fb)].into_iter().flatten().collect();
        let verdict = if warnings.is_empty() { verdict } else { format!("{verdict}; but {}", warnings.join("; and ")) };
        let line = format!(
            "estimated on {}: left {} ({}), right {} ({}): {verdict}",
            ca.profile.title,
            crate::diag::text::format_us(ta),
            ca.estimate.limiter.name(),
            crate::diag::text::format_us(tb),
            cb.estimate.limiter.name()
        );
        writeln!(out, "{}", crate::render::prose(&line, &self.options.style))
    }

    /// `:reference [NAME]`.
    pub(crate) fn reference_view(&mut self, args: &str, out: &mut dyn Write) -> io::Result<Status> {
        let name = args.trim();
        if !name.is_empty() {
            match cost::profiles::find(name) {
                Ok(p) => {
                    self.options.gpu_profile = p;
                    self.options.gpu_profile_chosen = true;
                    self.backends.set_reference(p);
                    writeln!(out, "reference GPU: {}", p.title)?;
                    return Ok(Status::Ok);
                }
                Err(msg) => return self.view_error(out, &msg),
            }
        }
        // As wide as its content: the GPUs' names stay on one line.
        let mut table = Listing {
            header: vec!["", "name", "GPU", "SMs", "clock", "DRAM", "L2", "shared/SM"],
            right: vec![3, 4, 5, 6, 7],
            ..Listing::default()
        };
        for p in cost::PROFILES {
            let chosen = p == self.reference();
            table.row([
                (if chosen { "▶" } else { "" }).to_string(),
                p.name.to_string(),
                p.title.to_string(),
                p.sms.to_string(),
                format!("{:.2} GHz", p.clock_ghz),
                format!("{:.2} TB/s", p.dram_gbs / 1000.0),
                format!("{} MB", p.l2_bytes >> 20),
                format!("{} KB", p.shared_per_sm >> 10),
            ]);
        }
        write_listing(out, self.options.style.width, &table)?;
        if self.backends.sim_config().cost.is_none() {
            writeln!(
                out,
                "{}",
                self.options.style.warn("the cost model is off (`--no-cost-model`): `:time` counts warp steps only")
            )?;
        }
        writeln!(
            out,
            "{}",
            self.options
                .style
                .dim("`:reference NAME` picks one; `docs/cost-model.md` gives where each figure comes from")
        )?;
        Ok(Status::Ok)
    }
}
