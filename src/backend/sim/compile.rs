//! Compiles a checked kernel (`cuda::ast`) to the simulator's register bytecode.
//!
//! Every `__device__` call is inlined, so a kernel is one flat instruction list. Registers are
//! per lane and hold 64-bit patterns in a canonical form: signed integers sign-extended, unsigned
//! ones and `bool` zero-extended, `float` as its IEEE bits in the low half, pointers encoded as
//! region and offset (see `memory.rs`). Control flow is plain jumps laid out in source order, so
//! the engine's "run the lanes with the smallest program counter" rule reconverges after every
//! `if` and loop.

use std::collections::HashMap;

use crate::cuda::ast::{
    AtomicOp, Axis, BarrierReduce, BinaryOp, BuiltinVar, Expr, ExprKind, FuncId, Function, Intrinsic, MathFn, MemId,
    Program, Scalar, ShflKind, Stmt, StmtKind, Type, UnaryOp, WarpReduceOp,
};
use crate::diag::{Diagnostic, Span};

use super::memory::{self, STATIC_REGION_BASE};
use super::printf::{self, Piece};

/// A register index (per lane).
pub type Reg = u32;

/// Local arrays per thread (CUDA allows more, but the simulator keeps them for every thread of a
/// resident block).
const MAX_LOCAL_BYTES: u64 = 64 << 10;

/// Inlining every call can grow a kernel exponentially (each function calling the one before
/// twice doubles it), so a kernel's bytecode and registers per lane are capped.
const MAX_CODE: usize = 1 << 20;
const MAX_REGS: u32 = 1 << 16;

/// Registers 0..12 hold `threadIdx`, `blockIdx`, `blockDim`, `gridDim` (x, y, z each); the
/// kernel's parameters follow.
pub const SPECIAL_REGS: u32 = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vote {
    Ballot,
    Any,
    All,
    /// `__reduce_*_sync`: the lanes' values combined, in the value's type.
    Reduce(WarpReduceOp, Scalar),
    MatchAny,
    MatchAll,
}

/// One instruction. `ty` is always the type the operation works in; pointers are `U64`.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Imm {
        dst: Reg,
        val: u64,
    },
    Mov {
        dst: Reg,
        src: Reg,
    },
    /// Arithmetic, bitwise and comparison operators (`LogAnd`/`LogOr` are compiled to branches).
    Bin {
        op: BinaryOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Un {
        op: UnaryOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
    },
    Cvt {
        from: Scalar,
        to: Scalar,
        dst: Reg,
        a: Reg,
    },
    /// `dst = ptr + idx * scale` (`idx` is an `i64`).
    PtrAdd {
        dst: Reg,
        ptr: Reg,
        idx: Reg,
        scale: u32,
    },
    /// `PtrAdd` into one row of a kernel's multi-dimensional array (`s[r][c]`'s `c`): the same
    /// arithmetic, and an index outside `0..len` is a finding (`Kernel::dim_checks` says whose),
    /// since C checks no dimension but the whole array's, so `s[0][9]` of a `float s[4][8]`
    /// quietly lands on `s[1][1]`.
    PtrAddIn {
        dst: Reg,
        ptr: Reg,
        idx: Reg,
        scale: u16,
        len: u16,
    },
    /// `dst = a + b` (64-bit), the flat index `r * cols + c` of a row-major array whose
    /// column `c` is `b` and whose row has `len` elements (a register: the array's extent), so
    /// that a column outside `0..len` is a finding (`Kernel::dim_checks` says whose) where
    /// Numba's compiled kernel quietly lands on another row. Only a Python kernel's arrays
    /// (`Function::row_major`) are known to be laid out this way.
    AddIn {
        dst: Reg,
        a: Reg,
        b: Reg,
        len: Reg,
    },
    /// `dst = (a - b) / scale`.
    PtrDiff {
        dst: Reg,
        a: Reg,
        b: Reg,
        scale: u32,
    },
    Load {
        ty: Scalar,
        dst: Reg,
        addr: Reg,
    },
    Store {
        ty: Scalar,
        addr: Reg,
        src: Reg,
    },
    /// A vector type's `n` components moved in one instruction (`float4` is four `F32`s), as a
    /// GPU's 64- and 128-bit loads do: one memory access of `n * size` bytes for the cost
    /// model, aligned to that size, into registers `dst..dst + n`.
    LoadVec {
        ty: Scalar,
        n: u8,
        dst: Reg,
        addr: Reg,
    },
    StoreVec {
        ty: Scalar,
        n: u8,
        addr: Reg,
        src: Reg,
    },
    /// Zero `bytes` bytes at `addr` (re-entering a local array's declaration), and mark them
    /// `written` (the declaration has an initialiser) or not (a later read is uninitialised).
    Zero {
        addr: Reg,
        bytes: u32,
        written: bool,
    },
    Atomic {
        op: AtomicOp,
        ty: Scalar,
        dst: Reg,
        addr: Reg,
        a: Reg,
        b: Reg,
    },
    Jump {
        target: u32,
    },
    /// Jump when `(cond != 0) == when`.
    Branch {
        cond: Reg,
        when: bool,
        target: u32,
    },
    Exit,
    SyncThreads,
    /// `__syncthreads_count/_and/_or(pred)`: a barrier whose result, the predicate combined over
    /// the block, lands in `dst` when the block is released.
    SyncThreadsReduce {
        kind: BarrierReduce,
        dst: Reg,
        pred: Reg,
    },
    /// `__syncwarp(mask)` (and a tile's `sync`, with the tile's lanes as the mask).
    SyncWarp {
        mask: Reg,
    },
    /// `__threadfence*()`: for the race check, the thread's next atomics release what it did.
    Fence,
    Shfl {
        kind: ShflKind,
        dst: Reg,
        val: Reg,
        lane: Reg,
        width: Reg,
    },
    Vote {
        kind: Vote,
        dst: Reg,
        pred: Reg,
    },
    Math {
        f: MathFn,
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Min {
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Max {
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Abs {
        ty: Scalar,
        dst: Reg,
        a: Reg,
    },
    /// `__trap()` (`cond: None`) or `assert(cond)`.
    Trap {
        cond: Option<Reg>,
    },
    /// `clock()`, `clock64()`: the warp's step count so far.
    Clock {
        dst: Reg,
    },
    /// `printf`: `Kernel::printfs[index]`.
    Printf {
        index: u32,
    },
    /// Before a read of a local variable declared without a value: lanes whose `flag` register
    /// is still 0 read it uninitialised (`Kernel::vars[var]`). Each is reported once.
    CheckInit {
        flag: Reg,
        var: u32,
    },
}

impl Op {
    /// Instructions that need the whole warp together (run lane by lane in `Sequential` up to them).
    pub fn is_collective(&self) -> bool {
        matches!(self, Op::Shfl { .. } | Op::Vote { .. } | Op::SyncWarp { .. })
    }
}

/// Where a memory variable lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticKind {
    /// Index into a block's shared arrays.
    Shared,
    /// Byte offset in each thread's local area.
    Local { offset: u32 },
    /// `Program::globals[index]`.
    Global { index: u32, constant: bool },
}

/// A memory variable the kernel uses: region `STATIC_REGION_BASE + its index`.
#[derive(Clone, Debug)]
pub struct StaticMem {
    pub name: String,
    pub kind: StaticKind,
    /// Size in bytes; for `extern __shared__` the launch's dynamic size is used instead.
    pub bytes: u64,
    pub is_extern: bool,
    /// Element size, for indices in findings.
    pub elem: u32,
    /// Its dimensions, outermost first (`[16, 16]`), so that findings name `As[12][0]` as the
    /// kernel writes it rather than the flat `As[192]`.
    pub shape: Vec<u64>,
}

#[derive(Clone, Debug)]
pub struct PrintfCall {
    pub pieces: Vec<Piece>,
    pub args: Vec<(Reg, Scalar)>,
}

/// A compiled kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub code: Vec<Op>,
    /// The source span of each instruction (for memory accesses: the accessed lvalue).
    pub spans: Vec<Span>,
    /// For each instruction, the first instruction with the same span: findings are summarised
    /// per source location, so the load and the store of `a[i] += x` count as one place.
    pub sites: Vec<u32>,
    pub regs: u32,
    pub params: u32,
    pub statics: Vec<StaticMem>,
    /// Shared arrays, in `StaticKind::Shared` order: their index in `statics`.
    pub shared: Vec<u32>,
    pub local_bytes: u32,
    pub printfs: Vec<PrintfCall>,
    /// Names of the local variables declared without a value, whose reads are checked
    /// (`Op::CheckInit`): report key `memory::VAR_REGION_BASE + index`.
    pub vars: Vec<String>,
    /// What an optimising compiler makes of some instructions, for the cost model.
    pub hints: CostHints,
    /// Every `Op::PtrAddIn`, by instruction index (ascending): which array and dimension it
    /// indexes.
    pub dim_checks: Vec<DimCheck>,
}

/// The array and dimension an `Op::PtrAddIn` or `Op::AddIn` indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimCheck {
    pub pc: u32,
    pub array: DimArray,
    /// 0 is the outermost dimension (never checked here: past it is past the whole array).
    pub dim: u8,
    /// The access the index is of (`a[x, y]`), where its finding points.
    pub access: Span,
}

/// Whose dimension a `DimCheck` checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimArray {
    /// A kernel's own array: its index in `Kernel::statics`.
    Static(u32),
    /// A launch buffer, through the pointer in this register (a kernel parameter's).
    Buffer(Reg),
}

impl Kernel {
    /// Whether the division or remainder at `pc` is by a constant (`CostHints::constant_divisor`).
    pub fn divides_by_constant(&self, pc: u32) -> bool {
        self.hints.constant_divisor.binary_search(&pc).is_ok()
    }

    /// The array and dimension the `Op::PtrAddIn` at `pc` indexes.
    pub fn dim_check(&self, pc: u32) -> Option<DimCheck> {
        let i = self.dim_checks.binary_search_by_key(&pc, |d| d.pc).ok()?;
        Some(self.dim_checks[i])
    }
}

/// Instructions an optimising compiler (nvcc, NVVM) turns into something the simulator's
/// bytecode does not show, and the cost model should count: sorted instruction indices.
#[derive(Clone, Debug, Default)]
pub struct CostHints {
    /// Math calls that are full-precision routines (`sinf`), tens of instructions on a GPU,
    /// rather than one special-function instruction (`__sinf`).
    pub accurate_math: Vec<u32>,
    /// Integer atomics on an address the compiler can prove is the same for the whole warp
    /// (`atomicAdd(count, 1)`): it combines the warp's lanes first and sends one atomic.
    pub warp_aggregated: Vec<u32>,
    /// Integer divisions and remainders by a constant (a multiply and shifts, not a routine).
    pub constant_divisor: Vec<u32>,
}

impl Kernel {
    /// Bytes of memory variables one block needs: its shared arrays (`extern` ones sized by
    /// `dynamic`), its threads' local arrays, and the kernel's globals.
    pub fn memory_bytes(&self, block_threads: u64, dynamic: u64) -> u64 {
        let statics: u64 = self
            .statics
            .iter()
            .map(|s| match s.kind {
                StaticKind::Shared if s.is_extern => dynamic,
                StaticKind::Local { .. } => 0,
                _ => s.bytes,
            })
            .sum();
        statics.saturating_add((self.local_bytes as u64).saturating_mul(block_threads.next_multiple_of(32)))
    }
}

type Result<T> = std::result::Result<T, Diagnostic>;

fn unsupported(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(format!("the simulator cannot run this: {what}")).at(span)
}

/// The register type of a value type (pointers are `U64`).
fn reg_scalar(ty: &Type) -> Option<Scalar> {
    match ty {
        Type::Scalar(s) => Some(*s),
        Type::Ptr { .. } => Some(Scalar::U64),
        _ => None,
    }
}

/// Integer conversions that leave the canonical register pattern as it is: widening to 64 bits
/// (the pattern already is the value modulo 2^64), and widening a type whose values all fit.
/// Saves a step for every `a[i]` (an `int` index converted to `long long`).
fn is_noop_conversion(from: Scalar, to: Scalar) -> bool {
    use Scalar::*;
    match to {
        I64 | U64 => from.is_integer(),
        I32 => matches!(from, Bool | I8 | U8),
        U32 => matches!(from, Bool | U8),
        _ => false,
    }
}

fn elem_size(ty: &Type) -> u32 {
    match ty {
        Type::Void => 1,
        t => t.size().clamp(1, u32::MAX as u64) as u32,
    }
}

/// A place that can be read and written.
#[derive(Clone, Copy)]
enum Place {
    Reg(Reg),
    Mem {
        addr: Reg,
        ty: Scalar,
        span: Span,
    },
    /// A struct held in registers: one per leaf (see `Type::leaves`), from this one on.
    Regs(Reg),
    /// A struct in memory at `addr`.
    MemAgg {
        addr: Reg,
        span: Span,
    },
    /// `v.e[i]` with a computed `i`, of an array of `len` numbers held in registers from
    /// `base`: the element is picked at run time (a GPU would keep such an array in local
    /// memory). An index outside the array reads poison and writes nothing.
    RegIndex {
        base: Reg,
        len: u32,
        idx: Reg,
        ty: Scalar,
    },
}

/// The leaves of a struct type: byte offset and register type of each.
fn leaves(ty: &Type) -> Vec<(u64, Scalar)> {
    let mut out = Vec::new();
    ty.leaves(0, &mut out);
    out
}

/// The value of a constant index (`v.e[1]`: a number, converted to `long long`).
fn const_index(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::IntConst(v) => Some(*v as i64),
        ExprKind::Cast(inner) if inner.ty.scalar().is_some_and(|s| s.is_integer()) => const_index(inner),
        _ => None,
    }
}

/// Whether `e` names storage (a variable, element or member of one), as opposed to a value.
fn types_is_place(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Member { base, .. } => types_is_place(base),
        k => matches!(k, ExprKind::Local(_) | ExprKind::Mem(_) | ExprKind::Deref(_) | ExprKind::Index { .. }),
    }
}

/// Names of a struct variable's leaves for findings: `v.x`, `p.pos.y`, `s.v[2]`.
fn leaf_names(ty: &Type, prefix: &str, out: &mut Vec<String>) {
    match ty {
        Type::Struct(def) => def.fields.iter().for_each(|f| leaf_names(&f.ty, &format!("{prefix}.{}", f.name), out)),
        Type::Array { elem, len } => (0..*len).for_each(|i| leaf_names(elem, &format!("{prefix}[{i}]"), out)),
        _ => out.push(prefix.to_string()),
    }
}

/// The index of a struct's `field`-th member's first leaf, and the member.
fn member_leaf(ty: &Type, field: u32) -> Option<(u32, &crate::cuda::ast::Field)> {
    let def = ty.as_struct()?;
    let f = def.fields.get(field as usize)?;
    let before = def.fields[..field as usize].iter().map(|f| f.ty.leaf_count()).sum();
    Some((before, f))
}

struct Frame {
    func: FuncId,
    locals: Vec<Reg>,
    /// Locals declared without a value, by register: their "written" flag register and index
    /// in `Kernel::vars`.
    unset: HashMap<Reg, (Reg, u32)>,
    arrays: Vec<u32>,
    /// Reference parameters bound to memory (`a[i]` passed to `float &x`), by local id: uses of
    /// the parameter load and store there. (One bound to a register variable shares its
    /// register instead, in `locals`.)
    refs: HashMap<u32, Place>,
    /// Inlined call: the return value register and the jumps to patch to the call's end.
    ret: Option<(Reg, Vec<usize>)>,
}

/// How an inlined call binds one parameter.
#[derive(Clone, Copy)]
enum Bound {
    Value(Reg),
    /// A reference to a register variable: the callee uses the same register.
    Alias(Reg),
    /// A reference to memory.
    Place(Place),
}

struct LoopCtx {
    breaks: Vec<usize>,
    continues: Vec<usize>,
}

struct Compiler<'p> {
    program: &'p Program,
    code: Vec<Op>,
    spans: Vec<Span>,
    next: Reg,
    max: Reg,
    statics: Vec<StaticMem>,
    shared_map: HashMap<(FuncId, u32), u32>,
    global_map: HashMap<u32, u32>,
    /// The one region of every `extern __shared__` array, once one is used.
    extern_shared: Option<u32>,
    shared: Vec<u32>,
    local_bytes: u32,
    printfs: Vec<PrintfCall>,
    vars: Vec<String>,
    frames: Vec<Frame>,
    loops: Vec<LoopCtx>,
    span: Span,
    hints: CostHints,
    dim_checks: Vec<DimCheck>,
}

/// Compile kernel `name` of `program`.
pub fn compile(program: &Program, id: FuncId) -> Result<Kernel> {
    let func = program.functions.get(id as usize).ok_or_else(|| Diagnostic::error("no such kernel"))?;
    let mut c = Compiler {
        program,
        code: Vec::new(),
        spans: Vec::new(),
        next: SPECIAL_REGS,
        max: SPECIAL_REGS,
        statics: Vec::new(),
        shared_map: HashMap::new(),
        global_map: HashMap::new(),
        extern_shared: None,
        shared: Vec::new(),
        local_bytes: 0,
        printfs: Vec::new(),
        vars: Vec::new(),
        frames: Vec::new(),
        loops: Vec::new(),
        span: func.span,
        hints: CostHints::default(),
        dim_checks: Vec::new(),
    };
    // Parameters are the first locals, so they land in registers 12.. as the engine expects.
    // A struct parameter takes one register per member (the launch passes its members).
    let params: u32 = func.params.iter().map(|p| p.ty.leaf_count()).sum();
    let locals: Vec<Reg> = func.locals.iter().map(|l| c.temps(l.ty.leaf_count())).collect();
    let unset = c.unset_locals(func, &locals);
    let arrays = c.local_arrays(func)?;
    c.frames.push(Frame { func: id, locals, unset, arrays, refs: HashMap::new(), ret: None });
    c.block(&func.body)?;
    c.emit(Op::Exit);
    let mut first: HashMap<Span, u32> = HashMap::new();
    let sites = c.spans.iter().enumerate().map(|(pc, span)| *first.entry(*span).or_insert(pc as u32)).collect();
    Ok(Kernel {
        sites,
        code: c.code,
        spans: c.spans,
        regs: c.max,
        params,
        statics: c.statics,
        shared: c.shared,
        local_bytes: c.local_bytes,
        printfs: c.printfs,
        vars: c.vars,
        hints: c.hints,
        dim_checks: c.dim_checks,
    })
}

impl Compiler<'_> {
    fn emit(&mut self, op: Op) -> usize {
        self.code.push(op);
        self.spans.push(self.span);
        self.code.len() - 1
    }

    fn here(&self) -> u32 {
        self.code.len() as u32
    }

    fn patch(&mut self, at: usize, target: u32) {
        match &mut self.code[at] {
            Op::Jump { target: t } | Op::Branch { target: t, .. } => *t = target,
            _ => unreachable!("patching a non-jump"),
        }
    }

    fn temp(&mut self) -> Reg {
        self.temps(1)
    }

    /// `n` consecutive registers (a struct value), the first returned.
    fn temps(&mut self, n: u32) -> Reg {
        let r = self.next;
        self.next = self.next.saturating_add(n.max(1));
        self.max = self.max.max(self.next);
        r
    }

    fn imm(&mut self, val: u64) -> Reg {
        let dst = self.temp();
        self.emit(Op::Imm { dst, val });
        dst
    }

    fn frame(&self) -> &Frame {
        self.frames.last().expect("a frame while compiling")
    }

    fn local_arrays(&mut self, func: &Function) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        for a in &func.local_arrays {
            let bytes = a.ty.size();
            if self.local_bytes as u64 + bytes > MAX_LOCAL_BYTES {
                return Err(unsupported(a.span, "more than 64 KiB of local arrays per thread"));
            }
            let offset = self.local_bytes;
            self.local_bytes += (bytes as u32).next_multiple_of(8);
            out.push(self.add_static(StaticMem {
                name: a.name.clone(),
                kind: StaticKind::Local { offset },
                bytes,
                is_extern: false,
                elem: elem_size(a.ty.innermost()),
                shape: a.ty.dims(),
            }));
        }
        Ok(out)
    }

    /// The locals of `func` (in registers `locals`) declared without a value: each gets a flag
    /// register, allocated with the frame so that no temporary reuses it.
    fn unset_locals(&mut self, func: &Function, locals: &[Reg]) -> HashMap<Reg, (Reg, u32)> {
        fn walk(s: &Stmt, out: &mut Vec<u32>) {
            match &s.kind {
                StmtKind::Decl { local, init: None } => out.push(*local),
                StmtKind::If { then, else_, .. } => {
                    walk(then, out);
                    if let Some(e) = else_ {
                        walk(e, out);
                    }
                }
                StmtKind::While { body, .. } | StmtKind::DoWhile { body, .. } => walk(body, out),
                StmtKind::For { init, body, .. } => {
                    if let Some(i) = init {
                        walk(i, out);
                    }
                    walk(body, out);
                }
                StmtKind::Switch { body, .. } | StmtKind::Block(body) => body.iter().for_each(|s| walk(s, out)),
                _ => {}
            }
        }
        let mut ids = Vec::new();
        func.body.iter().for_each(|s| walk(s, &mut ids));
        let mut out = HashMap::new();
        for id in ids {
            let (Some(&reg), Some(var)) = (locals.get(id as usize), func.locals.get(id as usize)) else { continue };
            if reg_scalar(&var.ty).is_some() && !out.contains_key(&reg) {
                let flag = self.temp();
                out.insert(reg, (flag, self.vars.len() as u32));
                self.vars.push(var.name.clone());
            } else if matches!(var.ty, Type::Struct(_)) && !out.contains_key(&reg) {
                // Each member is checked on its own: `float2 v; v.x = 1;` leaves `v.y` unset.
                let mut names = Vec::new();
                leaf_names(&var.ty, &var.name, &mut names);
                for (i, name) in names.into_iter().enumerate() {
                    let flag = self.temp();
                    out.insert(reg + i as u32, (flag, self.vars.len() as u32));
                    self.vars.push(name);
                }
            }
        }
        out
    }

    /// Before reading register `r`: the check, if it holds a local declared without a value.
    fn check_init(&mut self, r: Reg) {
        if let Some(&(flag, var)) = self.frame().unset.get(&r) {
            self.emit(Op::CheckInit { flag, var });
        }
    }

    fn add_static(&mut self, m: StaticMem) -> u32 {
        self.statics.push(m);
        (self.statics.len() - 1) as u32
    }

    /// The region of a memory variable.
    fn mem_region(&mut self, id: MemId) -> Result<u32> {
        let func = self.frame().func;
        let index = match id {
            MemId::Local(i) => {
                *self.frame().arrays.get(i as usize).ok_or_else(|| unsupported(self.span, "bad array"))?
            }
            MemId::Shared(i) => match self.shared_map.get(&(func, i)) {
                Some(&s) => s,
                None => {
                    let var = self.program.functions[func as usize]
                        .shared
                        .get(i as usize)
                        .ok_or_else(|| unsupported(self.span, "bad shared variable"))?;
                    // Every `extern __shared__` array of a launch is the same memory, the
                    // launch's dynamic shared bytes, whichever function declares it (the
                    // `SharedMemory<T>` idiom declares it in a member function).
                    if var.is_extern
                        && let Some(s) = self.extern_shared
                    {
                        self.shared_map.insert((func, i), s);
                        return Ok(STATIC_REGION_BASE + s);
                    }
                    let s = self.add_static(StaticMem {
                        name: var.name.clone(),
                        kind: StaticKind::Shared,
                        bytes: var.ty.size(),
                        is_extern: var.is_extern,
                        elem: elem_size(var.ty.innermost()),
                        shape: var.ty.dims(),
                    });
                    self.shared.push(s);
                    self.shared_map.insert((func, i), s);
                    if var.is_extern {
                        self.extern_shared = Some(s);
                    }
                    s
                }
            },
            MemId::Global(i) => match self.global_map.get(&i) {
                Some(&s) => s,
                None => {
                    let g = self
                        .program
                        .globals
                        .get(i as usize)
                        .ok_or_else(|| unsupported(self.span, "bad global variable"))?;
                    if g.is_shared
                        && g.var.is_extern
                        && let Some(s) = self.extern_shared
                    {
                        self.global_map.insert(i, s);
                        return Ok(STATIC_REGION_BASE + s);
                    }
                    // A file-scope `__shared__` is each block's, as one in the kernel is.
                    let kind = if g.is_shared {
                        StaticKind::Shared
                    } else {
                        StaticKind::Global { index: i, constant: g.is_constant }
                    };
                    let s = self.add_static(StaticMem {
                        name: g.var.name.clone(),
                        kind,
                        bytes: g.var.ty.size(),
                        is_extern: g.var.is_extern,
                        elem: elem_size(g.var.ty.innermost()),
                        shape: g.var.ty.dims(),
                    });
                    if g.is_shared {
                        self.shared.push(s);
                        if g.var.is_extern {
                            self.extern_shared = Some(s);
                        }
                    }
                    self.global_map.insert(i, s);
                    s
                }
            },
        };
        Ok(STATIC_REGION_BASE + index)
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<()> {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        let mark = self.next;
        self.span = s.span;
        match &s.kind {
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
            StmtKind::Decl { local, init } => {
                let dst = self.local(*local)?;
                let func = &self.program.functions[self.frame().func as usize];
                let lty = func.locals.get(*local as usize).map(|v| v.ty.clone()).unwrap_or(Type::Void);
                match init {
                    Some(e) if matches!(lty, Type::Struct(_)) => {
                        let v = self.expr(e)?;
                        self.store(Place::Regs(dst), v, &lty);
                    }
                    None if matches!(lty, Type::Struct(_)) => {
                        for (i, (_, s)) in leaves(&lty).into_iter().enumerate() {
                            let r = dst + i as u32;
                            self.emit(Op::Imm { dst: r, val: memory::poison(s) });
                            if let Some((flag, _)) = self.frame().unset.get(&r).copied() {
                                self.emit(Op::Imm { dst: flag, val: 0 });
                            }
                        }
                    }
                    Some(e) => {
                        let v = self.expr(e)?;
                        self.emit(Op::Mov { dst, src: v });
                    }
                    None => match self.frame().unset.get(&dst).copied() {
                        // Poisoned, and marked unwritten: each pass through the declaration
                        // starts it over, as C's lifetime rules say.
                        Some((flag, _)) => {
                            let func = &self.program.functions[self.frame().func as usize];
                            let ty = func.locals.get(*local as usize).and_then(|v| reg_scalar(&v.ty));
                            self.emit(Op::Imm { dst, val: ty.map_or(0, memory::poison) });
                            self.emit(Op::Imm { dst: flag, val: 0 });
                        }
                        None => {
                            self.emit(Op::Imm { dst, val: 0 });
                        }
                    },
                }
            }
            StmtKind::ArrayDecl { array, init } => {
                let region = self.mem_region(MemId::Local(*array))?;
                let m = &self.statics[(region - STATIC_REGION_BASE) as usize];
                let (bytes, elem) = (m.bytes as u32, m.elem);
                let func = &self.program.functions[self.frame().func as usize];
                let ty = func.local_arrays[*array as usize].ty.innermost().clone();
                let base = self.imm(memory::make_ptr(region, 0));
                self.emit(Op::Zero { addr: base, bytes, written: init.is_some() });
                if let (Some(init), Some(s)) = (init, reg_scalar(&ty)) {
                    for (i, e) in init.iter().enumerate() {
                        let v = self.expr(e)?;
                        let addr = self.imm(memory::make_ptr(region, i as i64 * elem as i64));
                        self.span = e.span;
                        self.emit(Op::Store { ty: s, addr, src: v });
                    }
                } else if let (Some(init), Type::Struct(_)) = (init, &ty) {
                    for (i, e) in init.iter().enumerate() {
                        let v = self.expr(e)?;
                        let addr = self.imm(memory::make_ptr(region, i as i64 * elem as i64));
                        self.span = e.span;
                        self.store(Place::MemAgg { addr, span: e.span }, v, &ty);
                    }
                }
            }
            StmtKind::If { cond, then, else_ } => {
                let c = self.expr(cond)?;
                let to_else = self.emit(Op::Branch { cond: c, when: false, target: 0 });
                self.next = mark;
                self.stmt(then)?;
                match else_ {
                    Some(e) => {
                        let to_end = self.emit(Op::Jump { target: 0 });
                        let here = self.here();
                        self.patch(to_else, here);
                        self.stmt(e)?;
                        let here = self.here();
                        self.patch(to_end, here);
                    }
                    None => {
                        let here = self.here();
                        self.patch(to_else, here);
                    }
                }
            }
            StmtKind::While { cond, body } => {
                let top = self.here();
                let c = self.expr(cond)?;
                let exit = self.emit(Op::Branch { cond: c, when: false, target: 0 });
                self.next = mark;
                let l = self.loop_body(body)?;
                self.span = s.span;
                self.emit(Op::Jump { target: top });
                let end = self.here();
                self.patch(exit, end);
                self.end_loop(l, top, end);
            }
            StmtKind::DoWhile { body, cond } => {
                let top = self.here();
                let l = self.loop_body(body)?;
                let cont = self.here();
                self.span = cond.span;
                let c = self.expr(cond)?;
                self.emit(Op::Branch { cond: c, when: true, target: top });
                let end = self.here();
                self.end_loop(l, cont, end);
            }
            StmtKind::For { init, cond, step, body } => {
                if let Some(i) = init {
                    self.stmt(i)?;
                }
                let top = self.here();
                let exit = match cond {
                    Some(c) => {
                        self.span = c.span;
                        let r = self.expr(c)?;
                        self.next = mark;
                        Some(self.emit(Op::Branch { cond: r, when: false, target: 0 }))
                    }
                    None => None,
                };
                let l = self.loop_body(body)?;
                let cont = self.here();
                if let Some(st) = step {
                    self.span = st.span;
                    self.expr(st)?;
                    self.next = mark;
                }
                self.span = s.span;
                self.emit(Op::Jump { target: top });
                let end = self.here();
                if let Some(e) = exit {
                    self.patch(e, end);
                }
                self.end_loop(l, cont, end);
            }
            StmtKind::Switch { value, cases, default, body } => {
                let v = self.expr(value)?;
                let ty = self.scalar(&value.ty, value.span)?;
                let mut jumps = Vec::new();
                for &(bits, at) in cases {
                    let c = self.imm(bits);
                    let t = self.temp();
                    self.emit(Op::Bin { op: BinaryOp::Eq, ty, dst: t, a: v, b: c });
                    jumps.push((self.emit(Op::Branch { cond: t, when: true, target: 0 }), at));
                }
                let no_match = self.emit(Op::Jump { target: 0 });
                self.next = mark;
                // `break` leaves the switch; `continue` goes on to the enclosing loop.
                self.loops.push(LoopCtx { breaks: Vec::new(), continues: Vec::new() });
                let mut starts = Vec::with_capacity(body.len() + 1);
                let mut result = Ok(());
                for st in body {
                    starts.push(self.here());
                    result = self.stmt(st);
                    if result.is_err() {
                        break;
                    }
                }
                let ctx = self.loops.pop().expect("switch context");
                result?;
                let end = self.here();
                starts.push(end);
                for (j, at) in jumps {
                    self.patch(j, starts[at]);
                }
                self.patch(no_match, default.map_or(end, |d| starts[d]));
                for j in ctx.breaks {
                    self.patch(j, end);
                }
                if !ctx.continues.is_empty() {
                    self.loops
                        .last_mut()
                        .ok_or_else(|| unsupported(s.span, "`continue` outside a loop"))?
                        .continues
                        .extend(ctx.continues);
                }
            }
            StmtKind::Break => {
                let j = self.emit(Op::Jump { target: 0 });
                self.loops.last_mut().ok_or_else(|| unsupported(s.span, "`break` outside a loop"))?.breaks.push(j);
            }
            StmtKind::Continue => {
                let j = self.emit(Op::Jump { target: 0 });
                self.loops
                    .last_mut()
                    .ok_or_else(|| unsupported(s.span, "`continue` outside a loop"))?
                    .continues
                    .push(j);
            }
            StmtKind::Return(value) => {
                let v = value.as_ref().map(|e| self.expr(e)).transpose()?;
                if self.frame().ret.is_some() {
                    if let (Some(v), Some((dst, _))) = (v, &self.frame().ret) {
                        let dst = *dst;
                        let ret = self.program.functions[self.frame().func as usize].ret.clone();
                        for i in 0..ret.leaf_count() {
                            self.emit(Op::Mov { dst: dst + i, src: v + i });
                        }
                    }
                    let j = self.emit(Op::Jump { target: 0 });
                    if let Some((_, jumps)) = &mut self.frames.last_mut().expect("frame").ret {
                        jumps.push(j);
                    }
                } else {
                    self.emit(Op::Exit);
                }
            }
            StmtKind::Block(stmts) => self.block(stmts)?,
            StmtKind::Empty => {}
        }
        self.next = mark;
        Ok(())
    }

    fn loop_body(&mut self, body: &Stmt) -> Result<LoopCtx> {
        self.loops.push(LoopCtx { breaks: Vec::new(), continues: Vec::new() });
        self.stmt(body)?;
        Ok(self.loops.pop().expect("loop context"))
    }

    fn end_loop(&mut self, l: LoopCtx, cont: u32, end: u32) {
        for j in l.continues {
            self.patch(j, cont);
        }
        for j in l.breaks {
            self.patch(j, end);
        }
    }

    fn local(&self, id: u32) -> Result<Reg> {
        self.frame().locals.get(id as usize).copied().ok_or_else(|| unsupported(self.span, "bad local variable"))
    }

    fn scalar(&self, ty: &Type, span: Span) -> Result<Scalar> {
        reg_scalar(ty).ok_or_else(|| unsupported(span, &format!("a value of type `{}`", ty.c_name())))
    }

    /// The address of a memory lvalue.
    fn addr_of(&mut self, e: &Expr) -> Result<Reg> {
        match &e.kind {
            ExprKind::Mem(id) => {
                let region = self.mem_region(*id)?;
                Ok(self.imm(memory::make_ptr(region, 0)))
            }
            ExprKind::Deref(p) => self.expr(p),
            ExprKind::Index { base, index } => {
                let ptr = self.expr(base)?;
                let idx = match self.row_major_index(base, index, e.span)? {
                    Some(idx) => idx,
                    None => self.expr(index)?,
                };
                let dst = self.temp();
                let scale = elem_size(&e.ty);
                match self.inner_dimension(base)? {
                    Some((array, dim, len))
                        if let (Ok(scale), Ok(len)) = (u16::try_from(scale), u16::try_from(len)) =>
                    {
                        // At the access itself, not the statement: its finding quotes the index.
                        let statement = std::mem::replace(&mut self.span, e.span);
                        let pc = self.emit(Op::PtrAddIn { dst, ptr, idx, scale, len });
                        self.span = statement;
                        self.dim_checks.push(DimCheck {
                            pc: pc as u32,
                            array: DimArray::Static(array),
                            dim,
                            access: e.span,
                        });
                    }
                    _ => {
                        self.emit(Op::PtrAdd { dst, ptr, idx, scale });
                    }
                }
                Ok(dst)
            }
            ExprKind::Member { base, field } => {
                let (_, f) = member_leaf(&base.ty, *field).ok_or_else(|| unsupported(e.span, "bad member"))?;
                let offset = f.offset;
                match self.place(base)? {
                    Place::MemAgg { addr, .. } => Ok(self.offset_addr(addr, offset)),
                    _ => Err(unsupported(
                        e.span,
                        "an array inside a struct variable (keep the struct in memory, e.g. an array of one)",
                    )),
                }
            }
            _ => Err(unsupported(e.span, "taking the address of this expression")),
        }
    }

    /// When `base` (an indexed pointer) is a row of a kernel's own multi-dimensional array,
    /// `s[r]` in `s[r][c]`: the array (its index in `statics`), the dimension the next index
    /// picks in, and that dimension's length. Only inner dimensions: an index past the first
    /// is past the whole array, which the memory's bounds already catch.
    fn inner_dimension(&mut self, base: &Expr) -> Result<Option<(u32, u8, u64)>> {
        let ExprKind::Decay(row) = &base.kind else { return Ok(None) };
        let Type::Array { len, .. } = &row.ty else { return Ok(None) };
        let mut dim = 0u8;
        let mut at = &**row;
        loop {
            match &at.kind {
                ExprKind::Index { base, .. } => {
                    let ExprKind::Decay(outer) = &base.kind else { return Ok(None) };
                    dim = dim.saturating_add(1);
                    at = outer;
                }
                ExprKind::Mem(id) if dim > 0 => {
                    let region = self.mem_region(*id)?;
                    return Ok(Some((region - STATIC_REGION_BASE, dim, u64::from(*len))));
                }
                _ => return Ok(None),
            }
        }
    }

    /// The flat index of a row-major array parameter (`Function::row_major`: a Python kernel's
    /// `a[r * a_cols + c]`), its last addition an `Op::AddIn` that checks the column `c`
    /// against the extent it is multiplied by: the same instructions and steps as the plain
    /// index. `None` where `index` is not of that shape or `base` is no such parameter.
    fn row_major_index(&mut self, base: &Expr, index: &Expr, access: Span) -> Result<Option<Reg>> {
        let Some(frame) = self.frames.last() else { return Ok(None) };
        if self.frames.len() != 1 {
            return Ok(None);
        }
        let func = &self.program.functions[frame.func as usize];
        let ExprKind::Local(pointer) = base.kind else { return Ok(None) };
        let Some(array) = func.row_major.iter().find(|a| a.pointer == pointer as usize) else { return Ok(None) };
        let ExprKind::Binary { op: BinaryOp::Add, lhs, rhs } = &index.kind else { return Ok(None) };
        let ExprKind::Binary { op: BinaryOp::Mul, rhs: extent, .. } = &lhs.kind else { return Ok(None) };
        let mut extent = &**extent;
        while let ExprKind::Cast(inner) = &extent.kind {
            extent = inner;
        }
        let dim = array.extents.len() - 1;
        if extent.kind != ExprKind::Local(array.extents[dim] as u32) {
            return Ok(None);
        }
        let ty = self.scalar(&lhs.ty, lhs.span)?;
        if !matches!(ty, Scalar::I64 | Scalar::U64) {
            return Ok(None);
        }
        let (Some(&buffer), Some(&len)) = (frame.locals.get(pointer as usize), frame.locals.get(array.extents[dim]))
        else {
            return Ok(None);
        };
        let a = self.expr(lhs)?;
        let b = self.expr(rhs)?;
        let dst = self.temp();
        // The addition keeps the index's place, as `expr` gives it, for the cost model's lines;
        // the finding points at the access (`DimCheck::access`).
        let outer = std::mem::replace(&mut self.span, index.span);
        let pc = self.emit(Op::AddIn { dst, a, b, len });
        self.span = outer;
        self.dim_checks.push(DimCheck { pc: pc as u32, array: DimArray::Buffer(buffer), dim: dim as u8, access });
        Ok(Some(dst))
    }

    /// `addr + offset` bytes.
    fn offset_addr(&mut self, addr: Reg, offset: u64) -> Reg {
        if offset == 0 {
            return addr;
        }
        let idx = self.imm(offset);
        let dst = self.temp();
        self.emit(Op::PtrAdd { dst, ptr: addr, idx, scale: 1 });
        dst
    }

    fn place(&mut self, e: &Expr) -> Result<Place> {
        match &e.kind {
            ExprKind::Local(id) => match self.frame().refs.get(id) {
                Some(&p) => Ok(p),
                None if matches!(e.ty, Type::Struct(_)) => Ok(Place::Regs(self.local(*id)?)),
                None => Ok(Place::Reg(self.local(*id)?)),
            },
            ExprKind::Mem(_) | ExprKind::Deref(_) | ExprKind::Index { .. } if matches!(e.ty, Type::Struct(_)) => {
                let addr = self.addr_of(e)?;
                Ok(Place::MemAgg { addr, span: e.span })
            }
            // `v.e[i]`, an array member. Of a struct in memory: the element's address. Of a struct
            // variable in registers: a register, picked here for a constant index and at run time
            // for a computed one.
            ExprKind::Index { base, index } if matches!(&base.kind, ExprKind::Decay(m) if matches!(m.kind, ExprKind::Member { .. }) && types_is_place(m)) =>
            {
                let ExprKind::Decay(array) = &base.kind else { unreachable!("matched above") };
                let Type::Array { elem, len } = &array.ty else { return Err(unsupported(e.span, "this index")) };
                let aggregate = matches!(**elem, Type::Struct(_) | Type::Array { .. });
                let r = match self.place(array)? {
                    Place::MemAgg { addr, .. } => {
                        let idx = self.expr(index)?;
                        let dst = self.temp();
                        self.emit(Op::PtrAdd { dst, ptr: addr, idx, scale: elem_size(elem) });
                        return Ok(if aggregate {
                            Place::MemAgg { addr: dst, span: e.span }
                        } else {
                            Place::Mem { addr: dst, ty: self.scalar(elem, e.span)?, span: e.span }
                        });
                    }
                    Place::Regs(r) => r,
                    _ => return Err(unsupported(e.span, "this index")),
                };
                let Some(i) = const_index(index) else {
                    let Some(ty) = reg_scalar(elem) else {
                        return Err(unsupported(
                            e.span,
                            "a computed index into an array of structs inside a struct variable (index it with a constant, or keep the struct in memory, e.g. an array of one)",
                        ));
                    };
                    let idx = self.expr(index)?;
                    return Ok(Place::RegIndex { base: r, len: *len, idx, ty });
                };
                if i < 0 || i >= *len as i64 {
                    return Err(Diagnostic::error(format!("index {i} is past the end of `{}`", array.ty.c_name()))
                        .at(index.span)
                        .help(format!("the array has {len} elements, 0 to {}", len.saturating_sub(1))));
                }
                let at = r + i as u32 * elem.leaf_count();
                Ok(if aggregate { Place::Regs(at) } else { Place::Reg(at) })
            }
            ExprKind::Mem(_) | ExprKind::Deref(_) | ExprKind::Index { .. } => {
                let ty = self.scalar(&e.ty, e.span)?;
                let addr = self.addr_of(e)?;
                Ok(Place::Mem { addr, ty, span: e.span })
            }
            ExprKind::Member { base, field } => {
                let (leaf, f) = member_leaf(&base.ty, *field).ok_or_else(|| unsupported(e.span, "bad member"))?;
                let (offset, fty) = (f.offset, f.ty.clone());
                let at_struct = matches!(fty, Type::Struct(_) | Type::Array { .. });
                let bp = if types_is_place(base) {
                    self.place(base)?
                } else {
                    // A member of a value (`make_float2(a, b).x`, a call's result): read-only.
                    Place::Regs(self.expr(base)?)
                };
                Ok(match bp {
                    Place::Regs(r) if at_struct => Place::Regs(r + leaf),
                    Place::Regs(r) => Place::Reg(r + leaf),
                    Place::MemAgg { addr, .. } => {
                        let addr = self.offset_addr(addr, offset);
                        if at_struct {
                            Place::MemAgg { addr, span: e.span }
                        } else {
                            Place::Mem { addr, ty: self.scalar(&fty, e.span)?, span: e.span }
                        }
                    }
                    _ => return Err(unsupported(e.span, "this member access")),
                })
            }
            _ => Err(unsupported(e.span, "assigning to this expression")),
        }
    }

    /// Read a place into a fresh register (never the variable's own register, so a later store
    /// to the place leaves the value read intact).
    fn load(&mut self, p: Place, ty: &Type) -> Reg {
        match p {
            Place::Reg(r) => {
                let dst = self.temp();
                self.check_init(r);
                self.emit(Op::Mov { dst, src: r });
                dst
            }
            Place::Mem { addr, ty, span } => {
                let dst = self.temp();
                self.emit_at(span, Op::Load { ty, dst, addr });
                dst
            }
            Place::RegIndex { base, len, idx, ty } => {
                let dst = self.imm(memory::poison(ty));
                self.each_register(base, len, idx, |c, r| {
                    c.check_init(r);
                    c.emit(Op::Mov { dst, src: r });
                });
                dst
            }
            Place::Regs(r) => {
                let n = ty.leaf_count();
                let dst = self.temps(n);
                for i in 0..n {
                    self.check_init(r + i);
                    self.emit(Op::Mov { dst: dst + i, src: r + i });
                }
                dst
            }
            Place::MemAgg { addr, span } => {
                let parts = leaves(ty);
                let dst = self.temps(parts.len() as u32);
                if let Some((s, n)) = self.vector_access(ty) {
                    self.emit_at(span, Op::LoadVec { ty: s, n, dst, addr });
                    return dst;
                }
                for (i, (off, s)) in parts.into_iter().enumerate() {
                    let a = self.offset_addr(addr, off);
                    self.emit_at(span, Op::Load { ty: s, dst: dst + i as u32, addr: a });
                }
                dst
            }
        }
    }

    fn store(&mut self, p: Place, v: Reg, ty: &Type) {
        match p {
            Place::Reg(r) => {
                self.emit(Op::Mov { dst: r, src: v });
                if let Some(&(flag, _)) = self.frame().unset.get(&r) {
                    self.emit(Op::Imm { dst: flag, val: 1 });
                }
            }
            Place::Mem { addr, ty, span } => {
                self.emit_at(span, Op::Store { ty, addr, src: v });
            }
            Place::Regs(r) => {
                for i in 0..ty.leaf_count() {
                    self.store(Place::Reg(r + i), v + i, &Type::Void);
                }
            }
            Place::RegIndex { base, len, idx, .. } => {
                self.each_register(base, len, idx, |c, r| c.store(Place::Reg(r), v, &Type::Void));
            }
            Place::MemAgg { addr, span } => {
                if let Some((s, n)) = self.vector_access(ty) {
                    self.emit_at(span, Op::StoreVec { ty: s, n, addr, src: v });
                    return;
                }
                for (i, (off, s)) in leaves(ty).into_iter().enumerate() {
                    let a = self.offset_addr(addr, off);
                    self.emit_at(span, Op::Store { ty: s, addr: a, src: v + i as u32 });
                }
            }
        }
    }

    /// For each register `base + k` of a `len`-element array: `then(k's register)`, run only
    /// where `idx == k`.
    fn each_register(&mut self, base: Reg, len: u32, idx: Reg, mut then: impl FnMut(&mut Self, Reg)) {
        for k in 0..len {
            let kreg = self.imm(k as u64);
            let hit = self.temp();
            self.emit(Op::Bin { op: BinaryOp::Eq, ty: Scalar::I64, dst: hit, a: idx, b: kreg });
            let skip = self.emit(Op::Branch { cond: hit, when: false, target: 0 });
            then(self, base + k);
            let here = self.here();
            self.patch(skip, here);
        }
    }

    /// A vector type a GPU moves in one instruction (`float2`, `int4`, `uchar4`: 4, 8 or 16
    /// bytes): its component type and count.
    fn vector_access(&self, ty: &Type) -> Option<(Scalar, u8)> {
        let def = ty.as_struct().filter(|d| d.vector)?;
        let n = def.fields.len();
        let s = def.fields[0].ty.scalar()?;
        (matches!(def.size, 4 | 8 | 16) && def.size == n as u64 * s.size() as u64).then_some((s, n as u8))
    }

    fn emit_at(&mut self, span: Span, op: Op) -> usize {
        let saved = std::mem::replace(&mut self.span, span);
        let at = self.emit(op);
        self.span = saved;
        at
    }

    fn cvt(&mut self, a: Reg, from: Scalar, to: Scalar) -> Reg {
        if from == to || is_noop_conversion(from, to) {
            return a;
        }
        let dst = self.temp();
        self.emit(Op::Cvt { from, to, dst, a });
        dst
    }

    fn expr(&mut self, e: &Expr) -> Result<Reg> {
        let saved = std::mem::replace(&mut self.span, e.span);
        let r = self.expr_inner(e);
        self.span = saved;
        r
    }

    fn expr_inner(&mut self, e: &Expr) -> Result<Reg> {
        Ok(match &e.kind {
            ExprKind::IntConst(v) => self.imm(*v),
            ExprKind::FloatConst(f) => match e.ty.scalar() {
                Some(Scalar::F32) => self.imm((*f as f32).to_bits() as u64),
                _ => self.imm(f.to_bits()),
            },
            ExprKind::Local(id) => match self.frame().refs.get(id) {
                Some(&p) => self.load(p, &e.ty),
                None => {
                    let r = self.local(*id)?;
                    for i in 0..e.ty.leaf_count() {
                        self.check_init(r + i);
                    }
                    r
                }
            },
            ExprKind::Mem(_) | ExprKind::Deref(_) | ExprKind::Index { .. } | ExprKind::Member { .. } => {
                let p = self.place(e)?;
                self.load(p, &e.ty)
            }
            ExprKind::StructLit(values) => {
                let dst = self.temps(e.ty.leaf_count());
                let mut at = dst;
                for v in values {
                    let r = self.expr(v)?;
                    for i in 0..v.ty.leaf_count() {
                        self.emit(Op::Mov { dst: at + i, src: r + i });
                    }
                    at += v.ty.leaf_count();
                }
                dst
            }
            ExprKind::Decay(inner) | ExprKind::AddrOf(inner) => self.addr_of(inner)?,
            ExprKind::Builtin(v, axis) => {
                let base = match v {
                    BuiltinVar::ThreadIdx => 0,
                    BuiltinVar::BlockIdx => 3,
                    BuiltinVar::BlockDim => 6,
                    BuiltinVar::GridDim => 9,
                };
                base + match axis {
                    Axis::X => 0,
                    Axis::Y => 1,
                    Axis::Z => 2,
                }
            }
            ExprKind::WarpSize => self.imm(32),
            ExprKind::Unary { op, operand } => {
                let a = self.expr(operand)?;
                let ty = self.scalar(&operand.ty, operand.span)?;
                let dst = self.temp();
                self.emit(Op::Un { op: *op, ty, dst, a });
                dst
            }
            ExprKind::Binary { op: op @ (BinaryOp::LogAnd | BinaryOp::LogOr), lhs, rhs } => {
                let dst = self.temp();
                let l = self.expr(lhs)?;
                self.emit(Op::Mov { dst, src: l });
                let skip = self.emit(Op::Branch { cond: dst, when: *op == BinaryOp::LogOr, target: 0 });
                let r = self.expr(rhs)?;
                self.emit(Op::Mov { dst, src: r });
                let here = self.here();
                self.patch(skip, here);
                dst
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let ty = self.scalar(&lhs.ty, lhs.span)?;
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                let dst = self.temp();
                let pc = self.emit(Op::Bin { op: *op, ty, dst, a, b });
                self.note_division(pc, *op, rhs);
                dst
            }
            ExprKind::PtrOffset { ptr, offset } => {
                let scale = elem_size(ptr.ty.pointee().unwrap_or(&Type::Void));
                let p = self.expr(ptr)?;
                let idx = self.expr(offset)?;
                let dst = self.temp();
                self.emit(Op::PtrAdd { dst, ptr: p, idx, scale });
                dst
            }
            ExprKind::PtrDiff { lhs, rhs } => {
                let scale = elem_size(lhs.ty.pointee().unwrap_or(&Type::Void));
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                let dst = self.temp();
                self.emit(Op::PtrDiff { dst, a, b, scale });
                dst
            }
            ExprKind::Assign { lhs, rhs } => {
                let p = self.place(lhs)?;
                let v = self.expr(rhs)?;
                self.store(p, v, &lhs.ty);
                v
            }
            ExprKind::CompoundAssign { op, lhs, rhs, op_ty } => {
                let p = self.place(lhs)?;
                let old = self.load(p, &lhs.ty);
                let r = self.expr(rhs)?;
                let new = if let Some(pointee) = lhs.ty.pointee() {
                    let idx = if *op == BinaryOp::Sub {
                        let n = self.temp();
                        self.emit(Op::Un { op: UnaryOp::Neg, ty: Scalar::I64, dst: n, a: r });
                        n
                    } else {
                        r
                    };
                    let dst = self.temp();
                    self.emit(Op::PtrAdd { dst, ptr: old, idx, scale: elem_size(pointee) });
                    dst
                } else {
                    let lty = self.scalar(&lhs.ty, lhs.span)?;
                    let a = self.cvt(old, lty, *op_ty);
                    let dst = self.temp();
                    let pc = self.emit(Op::Bin { op: *op, ty: *op_ty, dst, a, b: r });
                    self.note_division(pc, *op, rhs);
                    self.cvt(dst, *op_ty, lty)
                };
                self.store(p, new, &lhs.ty);
                new
            }
            ExprKind::IncDec { lhs, increment, prefix } => {
                let p = self.place(lhs)?;
                let old = self.load(p, &lhs.ty);
                let new = if let Some(pointee) = lhs.ty.pointee() {
                    let idx = self.imm(if *increment { 1 } else { -1i64 as u64 });
                    let dst = self.temp();
                    self.emit(Op::PtrAdd { dst, ptr: old, idx, scale: elem_size(pointee) });
                    dst
                } else {
                    let lty = self.scalar(&lhs.ty, lhs.span)?;
                    // Small types step in `int`, as C's promotions say.
                    let wty = match lty {
                        Scalar::Bool | Scalar::I8 | Scalar::U8 | Scalar::I16 | Scalar::U16 => Scalar::I32,
                        t => t,
                    };
                    let one = match wty {
                        Scalar::F32 => 1f32.to_bits() as u64,
                        Scalar::F64 => 1f64.to_bits(),
                        _ => 1,
                    };
                    let a = self.cvt(old, lty, wty);
                    let b = self.imm(one);
                    let dst = self.temp();
                    let op = if *increment { BinaryOp::Add } else { BinaryOp::Sub };
                    self.emit(Op::Bin { op, ty: wty, dst, a, b });
                    self.cvt(dst, wty, lty)
                };
                self.store(p, new, &lhs.ty);
                if *prefix { new } else { old }
            }
            ExprKind::Cond { cond, then, else_ } => {
                let n = e.ty.leaf_count();
                let dst = self.temps(n);
                let c = self.expr(cond)?;
                let to_else = self.emit(Op::Branch { cond: c, when: false, target: 0 });
                let t = self.expr(then)?;
                for i in 0..n {
                    self.emit(Op::Mov { dst: dst + i, src: t + i });
                }
                let to_end = self.emit(Op::Jump { target: 0 });
                let here = self.here();
                self.patch(to_else, here);
                let f = self.expr(else_)?;
                for i in 0..n {
                    self.emit(Op::Mov { dst: dst + i, src: f + i });
                }
                let here = self.here();
                self.patch(to_end, here);
                dst
            }
            ExprKind::Cast(inner) => {
                let a = self.expr(inner)?;
                match (reg_scalar(&inner.ty), &e.ty) {
                    (_, Type::Void) => a,
                    (Some(_), Type::Ptr { .. }) if inner.ty.is_pointer() => a,
                    (Some(from), to) => {
                        let to = self.scalar(to, e.span)?;
                        // A pointer is a `U64` pattern; only its test against zero matters.
                        self.cvt(a, from, to)
                    }
                    (None, _) => return Err(unsupported(e.span, "this conversion")),
                }
            }
            ExprKind::Call { func, args } => self.call(*func, args, e)?,
            ExprKind::Intrinsic { which, args } => self.intrinsic(*which, args, e)?,
            ExprKind::Printf { format, args } => {
                let pieces = printf::parse(format);
                let mut regs = Vec::new();
                for a in args {
                    let r = self.expr(a)?;
                    regs.push((r, self.scalar(&a.ty, a.span)?));
                }
                self.printfs.push(PrintfCall { pieces, args: regs });
                let index = (self.printfs.len() - 1) as u32;
                self.emit(Op::Printf { index });
                self.imm(0)
            }
            ExprKind::Comma { lhs, rhs } => {
                self.expr(lhs)?;
                self.expr(rhs)?
            }
        })
    }

    fn call(&mut self, id: FuncId, args: &[Expr], e: &Expr) -> Result<Reg> {
        if self.frames.iter().any(|f| f.func == id) || self.frames.len() > 64 {
            return Err(unsupported(e.span, "recursive functions"));
        }
        let func = self.program.functions.get(id as usize).ok_or_else(|| unsupported(e.span, "bad function"))?;
        self.size_limit(e.span, Some(id))?;
        // Arguments first, in the caller's frame. A reference parameter binds to the caller's
        // variable: its register (shared, so writes land in it) or its address.
        let mut values = Vec::new();
        for (a, p) in args.iter().zip(&func.params) {
            values.push(match (&a.kind, p.by_ref) {
                // A reference passed on binds to what the caller's reference names.
                (ExprKind::Local(id), true) if self.frame().refs.contains_key(id) => {
                    Bound::Place(self.frame().refs[id])
                }
                (ExprKind::Local(id), true) => Bound::Alias(self.local(*id)?),
                (_, true) if types_is_place(a) => Bound::Place(self.place(a)?),
                // A member function called on a temporary (`(a * b).norm()`) gets a copy.
                _ => Bound::Value(self.expr(a)?),
            });
        }
        let mut locals: Vec<Reg> = Vec::new();
        let mut refs = HashMap::new();
        let mut aliased = HashMap::new();
        for (i, var) in func.locals.iter().enumerate() {
            let n = var.ty.leaf_count();
            match values.get(i) {
                Some(&Bound::Alias(r)) => {
                    // The caller's "written" flags follow the variable into the callee.
                    for leaf in r..r + n {
                        if let Some(&flag) = self.frame().unset.get(&leaf) {
                            aliased.insert(leaf, flag);
                        }
                    }
                    locals.push(r);
                }
                Some(&Bound::Place(p)) => {
                    refs.insert(i as u32, p);
                    locals.push(self.temps(n));
                }
                Some(&Bound::Value(v)) => {
                    let dst = self.temps(n);
                    for leaf in 0..n {
                        self.emit(Op::Mov { dst: dst + leaf, src: v + leaf });
                    }
                    locals.push(dst);
                }
                None => locals.push(self.temps(n)),
            }
        }
        let mut unset = self.unset_locals(func, &locals);
        unset.extend(aliased);
        let arrays = self.local_arrays(func)?;
        let ret = self.temps(func.ret.leaf_count());
        self.frames.push(Frame { func: id, locals, unset, arrays, refs, ret: Some((ret, Vec::new())) });
        let saved_loops = std::mem::take(&mut self.loops);
        let body = self.block(&func.body);
        self.loops = saved_loops;
        let frame = self.frames.pop().expect("call frame");
        body?;
        self.size_limit(e.span, Some(id))?;
        let end = self.here();
        for j in frame.ret.map(|(_, j)| j).unwrap_or_default() {
            self.patch(j, end);
        }
        Ok(ret)
    }

    /// Refuse a kernel whose inlined calls made it too big, naming the chain of calls that got
    /// it there (the simulator inlines every `__device__` call).
    fn size_limit(&self, span: Span, callee: Option<FuncId>) -> Result<()> {
        if self.code.len() <= MAX_CODE && self.max <= MAX_REGS {
            return Ok(());
        }
        let name = |id: FuncId| self.program.functions.get(id as usize).map_or("?", |f| f.name.as_str());
        let mut chain: Vec<&str> = self.frames.iter().map(|f| name(f.func)).collect();
        chain.extend(callee.map(name));
        Err(Diagnostic::error("the kernel is too big for the simulator once its calls are inlined")
            .at(span)
            .label(format!(
                "more than {MAX_CODE} instructions or {MAX_REGS} registers, reached through {}",
                chain.join(" -> ")
            ))
            .help("the simulator copies a __device__ function into every place that calls it; call it in a loop instead of from several places, or run it with `:backend gpu`"))
    }

    /// A division or remainder by a constant, which a compiler turns into a multiply and shifts.
    fn note_division(&mut self, pc: usize, op: BinaryOp, divisor: &Expr) {
        let mut d = divisor;
        while let ExprKind::Cast(inner) = &d.kind {
            d = inner;
        }
        if matches!(op, BinaryOp::Div | BinaryOp::Rem) && matches!(d.kind, ExprKind::IntConst(_)) {
            self.hints.constant_divisor.push(pc as u32);
        }
    }

    /// Whether nvcc would combine this atomic's lanes into one per warp: an integer add,
    /// min, max or bitwise operation whose address depends on nothing that differs between
    /// the lanes of a warp (the kernel's parameters, constants, `blockIdx`, `blockDim`,
    /// `gridDim`). Measured on an H100 (`bench/cost/calibrate`): `atomicAdd(count, 1)` from
    /// every lane costs what one atomic per warp costs.
    fn warp_aggregated(&self, op: AtomicOp, ty: Scalar, addr: &Expr) -> bool {
        let combinable = matches!(
            op,
            AtomicOp::Add
                | AtomicOp::Sub
                | AtomicOp::Min
                | AtomicOp::Max
                | AtomicOp::And
                | AtomicOp::Or
                | AtomicOp::Xor
        );
        let kernel_params =
            if self.frames.len() == 1 { self.program.functions[self.frames[0].func as usize].params.len() } else { 0 };
        combinable && !matches!(ty, Scalar::F32 | Scalar::F64) && warp_uniform(addr, kernel_params)
    }

    fn intrinsic(&mut self, which: Intrinsic, args: &[Expr], e: &Expr) -> Result<Reg> {
        let mut r = Vec::new();
        for a in args {
            r.push(self.expr(a)?);
        }
        let arg = |i: usize| r.get(i).copied().ok_or_else(|| unsupported(e.span, "missing intrinsic argument"));
        let dst = self.temp();
        match which {
            Intrinsic::SyncThreads => {
                self.emit(Op::SyncThreads);
            }
            Intrinsic::SyncThreadsReduce(kind) => {
                let pred = arg(0)?;
                self.emit(Op::SyncThreadsReduce { kind, dst, pred });
            }
            Intrinsic::SyncWarp => {
                let mask = arg(0)?;
                self.emit(Op::SyncWarp { mask });
            }
            Intrinsic::ThreadFence => {
                self.emit(Op::Fence);
            }
            Intrinsic::Atomic { op, ty } => {
                let (addr, a) = (arg(0)?, arg(1)?);
                let b = if op == AtomicOp::Cas { arg(2)? } else { a };
                let pc = self.emit(Op::Atomic { op, ty, dst, addr, a, b });
                if self.warp_aggregated(op, ty, &args[0]) {
                    self.hints.warp_aggregated.push(pc as u32);
                }
            }
            Intrinsic::Shfl { kind, .. } => {
                let (val, lane) = (arg(1)?, arg(2)?);
                let width = match r.get(3) {
                    Some(w) => *w,
                    None => self.imm(32),
                };
                self.emit(Op::Shfl { kind, dst, val, lane, width });
            }
            Intrinsic::Ballot
            | Intrinsic::Any
            | Intrinsic::All
            | Intrinsic::WarpReduce { .. }
            | Intrinsic::MatchAny
            | Intrinsic::MatchAll => {
                let kind = match which {
                    Intrinsic::Ballot => Vote::Ballot,
                    Intrinsic::Any => Vote::Any,
                    Intrinsic::WarpReduce { op, ty } => Vote::Reduce(op, ty),
                    Intrinsic::MatchAny => Vote::MatchAny,
                    Intrinsic::MatchAll => Vote::MatchAll,
                    _ => Vote::All,
                };
                let pred = arg(1)?;
                self.emit(Op::Vote { kind, dst, pred });
            }
            Intrinsic::Math { f, ty, fast } => {
                let a = arg(0)?;
                let b = r.get(1).copied().unwrap_or(a);
                let c = r.get(2).copied().unwrap_or(a);
                let pc = self.emit(Op::Math { f, ty, dst, a, b, c });
                if !fast {
                    self.hints.accurate_math.push(pc as u32);
                }
            }
            Intrinsic::Min { ty } => {
                let (a, b) = (arg(0)?, arg(1)?);
                self.emit(Op::Min { ty, dst, a, b });
            }
            Intrinsic::Max { ty } => {
                let (a, b) = (arg(0)?, arg(1)?);
                self.emit(Op::Max { ty, dst, a, b });
            }
            Intrinsic::Abs { ty } => {
                let a = arg(0)?;
                self.emit(Op::Abs { ty, dst, a });
            }
            Intrinsic::Trap => {
                self.emit(Op::Trap { cond: None });
            }
            Intrinsic::Assert => {
                let c = arg(0)?;
                self.emit(Op::Trap { cond: Some(c) });
            }
            Intrinsic::Clock => {
                self.emit(Op::Clock { dst });
            }
        }
        Ok(dst)
    }
}

/// Whether `e` has one value for every lane of a warp by its form alone, as a compiler sees it:
/// built from the kernel's first `kernel_params` locals (its parameters, never reassigned in the
/// kernels a compiler would prove this for), constants and block-wide built-ins.
fn warp_uniform(e: &Expr, kernel_params: usize) -> bool {
    let uniform = |e: &Expr| warp_uniform(e, kernel_params);
    match &e.kind {
        ExprKind::IntConst(_) | ExprKind::FloatConst(_) | ExprKind::WarpSize | ExprKind::Mem(_) => true,
        ExprKind::Local(id) => (*id as usize) < kernel_params,
        ExprKind::Builtin(var, _) => !matches!(var, BuiltinVar::ThreadIdx),
        ExprKind::Decay(x) | ExprKind::AddrOf(x) | ExprKind::Cast(x) => uniform(x),
        ExprKind::Unary { operand, .. } => uniform(operand),
        ExprKind::Binary { lhs, rhs, .. } | ExprKind::PtrDiff { lhs, rhs } => uniform(lhs) && uniform(rhs),
        ExprKind::PtrOffset { ptr, offset } => uniform(ptr) && uniform(offset),
        // `&a[i]`: the element's address, not a load.
        ExprKind::Index { base, index } => uniform(base) && uniform(index),
        _ => false,
    }
}
