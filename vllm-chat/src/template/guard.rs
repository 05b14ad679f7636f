//! Size limits on minijinja's own operators, for templates sent in requests.
//!
//! The filters and methods that can make large values are wrapped in [`alloc`](super::alloc),
//! but the operators are minijinja's virtual machine, with no hook: `+` on two lists
//! materializes their concatenation once 32 are nested (33 doublings of
//! `{% set ns.x = ns.x + ns.x %}` ask for 2^33 items in one step), `~` formats a lazily
//! repeated list in full, and `s ~ s` doubles a string per instruction, bounded only by
//! fuel (which charges made bytes at 1/64 of an instruction).
//!
//! So a request template is compiled here rather than by [`minijinja::Environment`], and
//! its bytecode gets a check in front of every operator that makes a value and every
//! write of output: the check receives the operands, refuses a result larger than
//! [`Limits::max_value_bytes`], charges its size to the render's
//! [`Limits::max_made_bytes`] and hands the operands back to the unchanged instruction,
//! so the operator keeps minijinja's exact semantics. Writes of output are counted against
//! [`Limits::max_output_bytes`] before they happen.
//!
//! | instruction | becomes |
//! |---|---|
//! | `Add`, `Mul`, `StringConcat` | `CallFunction(check, 2)`, `UnpackList(2)`, the instruction |
//! | `Emit` | `CallFunction(check, 1)`, `Emit` |
//! | `EmitRaw(text)` | `LoadConst(len)`, `CallFunction(count, 1)`, `DiscardTop`, `EmitRaw(text)` |
//!
//! Jump targets and macro offsets are moved with the instructions. The checks are
//! functions whose names (`vllm:…`) no template can write, so none can shadow them. Model
//! templates keep the faster, unchecked path: they come with the checkpoint, and the
//! compiled fast path charges every byte it makes to the fuel.

use std::cell::Cell;
use std::collections::BTreeMap;

use minijinja::machinery::{self, CodeGenerator, Instruction, Instructions, ast};
use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, Value};

use super::Limits;
use super::alloc::{string_len, too_large};

const CHECK_ADD: &str = "vllm:check_add";
const CHECK_MUL: &str = "vllm:check_mul";
const CHECK_CONCAT: &str = "vllm:check_concat";
const CHECK_EMIT: &str = "vllm:check_emit";
const COUNT_RAW: &str = "vllm:count_raw";

/// A list item's cost in the byte counts (minijinja's own `SLOT_COST`).
const SLOT_BYTES: usize = 32;

thread_local! {
    /// The bytes the running guarded render has made and written (renders are
    /// synchronous: one render runs on a thread at a time).
    static RENDER: Cell<Counts> = const { Cell::new(Counts::ZERO) };
}

#[derive(Clone, Copy)]
struct Counts {
    made: usize,
    written: usize,
    /// Set when a write was refused, so the error becomes the output-size error.
    output_full: bool,
}

impl Counts {
    const ZERO: Counts = Counts {
        made: 0,
        written: 0,
        output_full: false,
    };
}

/// Registers the check functions the rewritten bytecode calls.
pub(crate) fn install(env: &mut Environment<'static>, limits: Limits) {
    let max = limits.max_value_bytes;
    let made_max = limits.max_made_bytes;
    let output_max = limits.max_output_bytes;
    env.add_function(CHECK_ADD, move |a: Value, b: Value| {
        let size = add_size(&a, &b);
        operands("`+`", size, max, made_max, a, b)
    });
    env.add_function(CHECK_MUL, move |a: Value, b: Value| {
        let size = mul_size(&a, &b);
        operands("`*`", size, max, made_max, a, b)
    });
    env.add_function(CHECK_CONCAT, move |state: &State, a: Value, b: Value| {
        let len = |v: &Value| match string_len(state, v, max) {
            Some(Ok(n)) => Ok(n),
            Some(Err(e)) => Err(e),
            None => Err(too_large("`~`", max)),
        };
        let size = len(&a)?.saturating_add(len(&b)?);
        operands("`~`", size, max, made_max, a, b)
    });
    env.add_function(CHECK_EMIT, move |state: &State, value: Value| {
        let room = output_max.saturating_sub(RENDER.get().written);
        let len = match string_len(state, &value, room) {
            Some(len) => len?,
            None => return Err(output_full(output_max)),
        };
        write(len, output_max)?;
        Ok(value)
    });
    env.add_function(COUNT_RAW, move |len: usize| write(len, output_max));
}

/// Checks an operator's result size, charges it, and gives the operands back in the
/// order `UnpackList` restores them to the stack (it pushes in reverse).
fn operands(
    what: &str,
    size: usize,
    max: usize,
    made_max: usize,
    a: Value,
    b: Value,
) -> Result<Value, Error> {
    if size > max {
        return Err(too_large(what, max));
    }
    let mut counts = RENDER.get();
    counts.made = counts.made.saturating_add(size);
    RENDER.set(counts);
    if counts.made > made_max {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "the template's operators made more than {made_max} bytes \
                 (Limits::max_made_bytes)"
            ),
        ));
    }
    Ok(Value::from(vec![b, a]))
}

fn write(len: usize, output_max: usize) -> Result<(), Error> {
    let mut counts = RENDER.get();
    counts.written = counts.written.saturating_add(len);
    RENDER.set(counts);
    if counts.written > output_max {
        return Err(output_full(output_max));
    }
    Ok(())
}

fn output_full(max: usize) -> Error {
    RENDER.set(Counts {
        output_full: true,
        ..RENDER.get()
    });
    Error::new(
        ErrorKind::InvalidOperation,
        format!("the rendered prompt would exceed {max} bytes"),
    )
}

/// A string's bytes, a sized list's slots, or nothing (numbers; unsized iterables,
/// which minijinja only ever concatenates lazily).
fn size_of(v: &Value) -> Option<usize> {
    match v.kind() {
        ValueKind::String => v.as_str().map(str::len),
        ValueKind::Bytes => v.as_bytes().map(<[u8]>::len),
        ValueKind::Seq | ValueKind::Iterable => v.len().map(|n| n.saturating_mul(SLOT_BYTES)),
        _ => None,
    }
}

fn add_size(a: &Value, b: &Value) -> usize {
    match (size_of(a), size_of(b)) {
        (Some(x), Some(y)) => x.saturating_add(y),
        _ => 0,
    }
}

/// `s * n` makes `len(s) * n` bytes; a repeated tuple is made too. Lists repeat lazily
/// (the filters and `~` that would materialize them are checked themselves).
fn mul_size(a: &Value, b: &Value) -> usize {
    let (repeated, n) = if a.as_usize().is_some() {
        (b, a)
    } else {
        (a, b)
    };
    let n = n.as_usize().unwrap_or(0);
    match repeated.kind() {
        ValueKind::String | ValueKind::Bytes => size_of(repeated).unwrap_or(0).saturating_mul(n),
        _ if repeated.is_tuple() => size_of(repeated).unwrap_or(0).saturating_mul(n),
        _ => 0,
    }
}

/// The bytecode of `source` with the checks in front of its operators and writes.
pub(crate) struct Guarded<'source> {
    instructions: Instructions<'source>,
    blocks: BTreeMap<&'source str, Instructions<'source>>,
}

impl<'source> Guarded<'source> {
    /// Compiles `source` as minijinja would, then inserts the checks.
    pub(crate) fn compile(
        name: &'source str,
        source: &'source str,
        syntax: minijinja::syntax::SyntaxConfig,
    ) -> Result<Self, Error> {
        let ast = machinery::parse(source, name, syntax)?;
        let mut generator = CodeGenerator::new(name, source);
        generator.compile_stmt(&ast);
        let (instructions, blocks) = generator.finish();
        Ok(Guarded {
            instructions: rewrite(&instructions),
            blocks: blocks.iter().map(|(k, v)| (*k, rewrite(v))).collect(),
        })
    }

    /// Renders with the checks counting from zero. An output past the limit is
    /// reported as `Ok(None)`.
    pub(crate) fn render(
        &self,
        env: &'source Environment<'source>,
        ctx: Value,
    ) -> Result<Option<String>, Error> {
        let before = RENDER.replace(Counts::ZERO);
        let mut out = String::new();
        let result = machinery::eval(
            env,
            &self.instructions,
            ctx,
            &self.blocks,
            &mut machinery::make_string_output(&mut out),
            AutoEscape::None,
        )
        .map(|_| ());
        let counts = RENDER.replace(before);
        match result {
            Ok(()) => Ok(Some(out)),
            Err(_) if counts.output_full => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Inserts the checks, moving every jump target and macro offset with its instruction.
fn rewrite<'s>(old: &Instructions<'s>) -> Instructions<'s> {
    let mut pieces = Vec::new();
    while let Some(instruction) = old.get(pieces.len() as u32) {
        pieces.push(expansion(instruction));
    }
    // Where each old instruction starts in the new code (one past the end included:
    // loops jump there).
    let mut starts = Vec::with_capacity(pieces.len() + 1);
    let mut at = 0u32;
    for expanded in &pieces {
        starts.push(at);
        at += expanded.len() as u32;
    }
    starts.push(at);
    let moved = |target: u32| starts.get(target as usize).copied().unwrap_or(target);

    let mut new = Instructions::new(old.name(), old.source());
    for (idx, expanded) in pieces.into_iter().enumerate() {
        let span = old.get_span(idx as u32);
        let line = old.get_line(idx as u32);
        for piece in expanded {
            let piece = match piece {
                Instruction::Iterate(t) => Instruction::Iterate(moved(t)),
                Instruction::Jump(t) => Instruction::Jump(moved(t)),
                Instruction::JumpIfFalse(t) => Instruction::JumpIfFalse(moved(t)),
                Instruction::JumpIfFalseOrPop(t) => Instruction::JumpIfFalseOrPop(moved(t)),
                Instruction::JumpIfTrueOrPop(t) => Instruction::JumpIfTrueOrPop(moved(t)),
                Instruction::BuildMacro(name, offset, flags) => {
                    Instruction::BuildMacro(name, moved(offset), flags)
                }
                other => other,
            };
            match (span, line) {
                (Some(span), _) => new.add_with_span(piece, span),
                (None, Some(line)) => new.add_with_line(piece, line.min(u16::MAX as usize) as u16),
                (None, None) => new.add(piece),
            };
        }
    }
    new
}

/// The instructions one instruction becomes.
fn expansion<'s>(instruction: &Instruction<'s>) -> Vec<Instruction<'s>> {
    let checked = |check: &'static str| {
        vec![
            Instruction::CallFunction(check, Some(2)),
            Instruction::UnpackList(2),
            instruction.clone(),
        ]
    };
    match instruction {
        Instruction::Add => checked(CHECK_ADD),
        Instruction::Mul => checked(CHECK_MUL),
        Instruction::StringConcat => checked(CHECK_CONCAT),
        Instruction::Emit => vec![
            Instruction::CallFunction(CHECK_EMIT, Some(1)),
            Instruction::Emit,
        ],
        Instruction::EmitRaw(text) => vec![
            Instruction::LoadConst(Value::from(text.len())),
            Instruction::CallFunction(COUNT_RAW, Some(1)),
            Instruction::DiscardTop,
            instruction.clone(),
        ],
        other => vec![other.clone()],
    }
}

/// Refuses a template whose constants minijinja would fold into a large value while
/// compiling, before any limit applies: `[x] * N` with a constant `N` is a lazily
/// repeated list that costs nothing to make, but folding `~` on it formats every item
/// and folding a comparison walks them all. Lists longer than
/// [`Limits::max_value_bytes`] allows (32 bytes an item) are refused where they appear.
pub(crate) fn check_constants(
    source: &str,
    syntax: minijinja::syntax::SyntaxConfig,
    max: usize,
) -> Result<(), Error> {
    let Ok(ast) = machinery::parse(source, "<template>", syntax) else {
        // minijinja reports the syntax error when it compiles the template.
        return Ok(());
    };
    let mut check = |expr: &ast::Expr<'_>| match expr {
        ast::Expr::BinOp(op) if matches!(op.op, ast::BinOpKind::Mul) => {
            let items = expr
                .as_const()
                .filter(|v| !matches!(v.kind(), ValueKind::String | ValueKind::Bytes))
                .and_then(|v| v.len())
                .unwrap_or(0);
            if items.saturating_mul(SLOT_BYTES) > max {
                return Err(too_large("a constant repeated list", max));
            }
            Ok(())
        }
        _ => Ok(()),
    };
    stmt(&ast, &mut check)
}

type Check<'c> = dyn FnMut(&ast::Expr<'_>) -> Result<(), Error> + 'c;

fn stmts(list: &[ast::Stmt<'_>], f: &mut Check<'_>) -> Result<(), Error> {
    list.iter().try_for_each(|s| stmt(s, f))
}

fn stmt(s: &ast::Stmt<'_>, f: &mut Check<'_>) -> Result<(), Error> {
    use ast::Stmt as S;
    match s {
        S::Template(t) => stmts(&t.children, f),
        S::EmitExpr(e) => expr(&e.expr, f),
        S::EmitRaw(_) | S::Continue(_) | S::Break(_) => Ok(()),
        S::ForLoop(l) => {
            expr(&l.target, f)?;
            expr(&l.iter, f)?;
            l.filter_expr.iter().try_for_each(|e| expr(e, f))?;
            stmts(&l.body, f)?;
            stmts(&l.else_body, f)
        }
        S::IfCond(c) => {
            expr(&c.expr, f)?;
            stmts(&c.true_body, f)?;
            stmts(&c.false_body, f)
        }
        S::WithBlock(w) => {
            for (target, value) in &w.assignments {
                expr(target, f)?;
                expr(value, f)?;
            }
            stmts(&w.body, f)
        }
        S::Set(set) => {
            expr(&set.target, f)?;
            expr(&set.expr, f)
        }
        S::SetBlock(set) => {
            expr(&set.target, f)?;
            set.filter.iter().try_for_each(|e| expr(e, f))?;
            stmts(&set.body, f)
        }
        S::AutoEscape(a) => {
            expr(&a.enabled, f)?;
            stmts(&a.body, f)
        }
        S::FilterBlock(b) => {
            expr(&b.filter, f)?;
            stmts(&b.body, f)
        }
        S::Block(b) => stmts(&b.body, f),
        S::Import(i) => {
            expr(&i.expr, f)?;
            expr(&i.name, f)
        }
        S::FromImport(i) => {
            expr(&i.expr, f)?;
            for (name, alias) in &i.names {
                expr(name, f)?;
                alias.iter().try_for_each(|e| expr(e, f))?;
            }
            Ok(())
        }
        S::Extends(e) => expr(&e.name, f),
        S::Include(i) => expr(&i.name, f),
        S::Macro(m) => macro_def(m, f),
        S::CallBlock(c) => {
            call(&c.call, f)?;
            macro_def(&c.macro_decl, f)
        }
        S::Do(d) => call(&d.call, f),
    }
}

fn macro_def(m: &ast::Macro<'_>, f: &mut Check<'_>) -> Result<(), Error> {
    m.args.iter().try_for_each(|e| expr(e, f))?;
    m.defaults.iter().try_for_each(|e| expr(e, f))?;
    stmts(&m.body, f)
}

fn call(c: &ast::Call<'_>, f: &mut Check<'_>) -> Result<(), Error> {
    expr(&c.expr, f)?;
    args(&c.args, f)
}

fn args(list: &[ast::CallArg<'_>], f: &mut Check<'_>) -> Result<(), Error> {
    list.iter().try_for_each(|a| match a {
        ast::CallArg::Pos(e)
        | ast::CallArg::Kwarg(_, e)
        | ast::CallArg::PosSplat(e)
        | ast::CallArg::KwargSplat(e) => expr(e, f),
    })
}

/// Visits `e`'s operands before `e` itself, so an operand is refused before the
/// expression around it is folded.
fn expr(e: &ast::Expr<'_>, f: &mut Check<'_>) -> Result<(), Error> {
    use ast::Expr as E;
    match e {
        E::Var(_) | E::Const(_) => {}
        E::Slice(s) => {
            expr(&s.expr, f)?;
            for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                expr(part, f)?;
            }
        }
        E::UnaryOp(u) => expr(&u.expr, f)?,
        E::BinOp(b) => {
            expr(&b.left, f)?;
            expr(&b.right, f)?;
        }
        E::Compare(c) => {
            expr(&c.expr, f)?;
            c.ops.iter().try_for_each(|op| expr(&op.expr, f))?;
        }
        E::IfExpr(i) => {
            expr(&i.test_expr, f)?;
            expr(&i.true_expr, f)?;
            i.false_expr.iter().try_for_each(|e| expr(e, f))?;
        }
        E::Filter(x) => {
            x.expr.iter().try_for_each(|e| expr(e, f))?;
            args(&x.args, f)?;
        }
        E::Test(t) => {
            expr(&t.expr, f)?;
            args(&t.args, f)?;
        }
        E::GetAttr(a) => expr(&a.expr, f)?,
        E::GetItem(i) => {
            expr(&i.expr, f)?;
            expr(&i.subscript_expr, f)?;
        }
        E::Call(c) => call(c, f)?,
        E::List(l) => l.items.iter().try_for_each(|e| expr(e, f))?,
        E::Tuple(t) => t.items.iter().try_for_each(|e| expr(e, f))?,
        E::Map(m) => {
            m.keys.iter().try_for_each(|e| expr(e, f))?;
            m.values.iter().try_for_each(|e| expr(e, f))?;
        }
    }
    f(e)
}
