//! Running a compiled template.
//!
//! Every operation does what minijinja's VM does for the value kinds it handles
//! (it calls the same `Value` comparisons, lookups and builtin tests) and gives up —
//! [`Bail`] — on anything else: errors, unusual kinds, unknown code. The caller then
//! renders the template with minijinja from the start, so a bail can cost time but
//! never change an output or an error message.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use minijinja::Value;
use minijinja::value::{Object, ObjectRepr, ValueKind};

use super::super::clock::Clock;
use super::super::value::JsonMap;
use super::Program;
use super::ir::{BinaryOp, Expr, Keywords, LoopAttr, Name, SliceExpr, Stmt, Target};

/// The compiled path cannot finish this render; the interpreter must.
#[derive(Debug)]
pub(crate) struct Bail;

pub(super) type Step<T> = Result<T, Bail>;

/// How a statement list ended.
enum Flow {
    Next,
    Break,
    Continue,
}

/// `namespace()`: attributes assignable from inner scopes.
#[derive(Debug, Default)]
struct Namespace(Mutex<Vec<(Box<str>, Value)>>);

impl Namespace {
    fn set(&self, key: &str, value: Value) {
        let mut attrs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match attrs.iter_mut().find(|(k, _)| &**k == key) {
            Some(slot) => slot.1 = value,
            None => attrs.push((key.into(), value)),
        }
    }
}

impl Object for Namespace {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        let attrs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        attrs
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| v.clone())
    }
}

/// A macro defined by this render: its definition and its closure (indices into
/// the program's macros and the render's closures; a macro never outlives its render).
#[derive(Debug)]
struct MacroValue {
    index: usize,
    closure: Option<usize>,
}

impl Object for MacroValue {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }
}

/// Values this module made whose behaviour elsewhere differs from minijinja's own.
pub(super) fn is_ours(value: &Value) -> bool {
    value.downcast_object_ref::<Namespace>().is_some()
        || value.downcast_object_ref::<MacroValue>().is_some()
}

/// Deepest macro recursion tried here (minijinja's own limit is higher; deeper
/// calls are left to it).
const MAX_MACRO_DEPTH: usize = 24;

/// A scope: where its variables start in [`Run::vars`], and the closure of the
/// macros defined in it (an index into [`Run::closures`]).
struct Scope {
    start: usize,
    closure: Option<usize>,
}

/// Variables macros captured where they were defined; later assignments in that
/// scope update them too (minijinja's closures bind late, like Python's).
type Closure = Vec<(Name, Value)>;

/// Sets `name` among `entries[from..]` (a scope's variables, a closure): in place if
/// present, else appended.
fn upsert(entries: &mut Vec<(Name, Value)>, from: usize, name: Name, value: Value) {
    match entries[from..].iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value,
        None => entries.push((name, value)),
    }
}

struct LoopState {
    items: Vec<Value>,
    index: usize,
}

pub(super) struct Run<'a> {
    pub(super) program: &'a Program,
    ctx: &'a Value,
    clock: Clock,
    fuel: u64,
    out: String,
    /// Render-context lookups by name, made on first use (`None`: not looked up yet).
    context: Vec<Option<Option<Value>>>,
    /// Variables of every scope (the template's, then one per running loop), the
    /// innermost last, so a backwards scan finds what Jinja's scoping finds.
    vars: Vec<(Name, Value)>,
    /// The template's scope, then one per running loop.
    scopes: Vec<Scope>,
    loops: Vec<LoopState>,
    /// Inside a macro: its closure as of the call (read after the macro's own
    /// variables, before the render context).
    captured: Closure,
    closures: Vec<Closure>,
    macro_depth: usize,
}

impl<'a> Run<'a> {
    pub(super) fn new(program: &'a Program, ctx: &'a Value, clock: Clock, fuel: u64) -> Self {
        Run {
            program,
            ctx,
            clock,
            fuel,
            out: String::with_capacity(program.output_hint()),
            context: vec![None; program.names.len()],
            vars: Vec::with_capacity(16),
            scopes: vec![Scope {
                start: 0,
                closure: None,
            }],
            loops: Vec::new(),
            captured: Vec::new(),
            closures: Vec::new(),
            macro_depth: 0,
        }
    }

    pub(super) fn run(mut self) -> Step<String> {
        let program = self.program;
        match self.stmts(&program.body)? {
            Flow::Next => Ok(self.out),
            Flow::Break | Flow::Continue => Err(Bail),
        }
    }

    /// Spends `amount` units of the render's budget (instructions and bytes made).
    pub(super) fn charge(&mut self, amount: usize) -> Step<()> {
        self.fuel = self.fuel.checked_sub(amount as u64).ok_or(Bail)?;
        Ok(())
    }

    fn stmts(&mut self, stmts: &'a [Stmt]) -> Step<Flow> {
        for stmt in stmts {
            match self.stmt(stmt)? {
                Flow::Next => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, stmt: &'a Stmt) -> Step<Flow> {
        self.charge(1)?;
        match stmt {
            Stmt::Raw(text) => {
                self.charge(text.len())?;
                self.out.push_str(text);
            }
            Stmt::Emit(Expr::AddChain(leaves)) => {
                // Strings go straight to the output; anything else undoes that and
                // adds the operands as the interpreter would.
                let start = self.out.len();
                for leaf in leaves {
                    let value = self.operand(leaf)?;
                    match value.as_str() {
                        Some(s) if !value.is_safe() => {
                            self.charge(s.len())?;
                            self.out.push_str(s);
                        }
                        _ => {
                            self.out.truncate(start);
                            let values = self.operands(leaves)?;
                            let value = self.add_all(&values)?;
                            self.emit(&value)?;
                            break;
                        }
                    }
                }
            }
            Stmt::Emit(expr) => {
                let value = self.expr(expr)?;
                self.emit(&value)?;
            }
            Stmt::If(cond, then, otherwise) => {
                let branch = if self.expr(cond)?.is_true() {
                    then
                } else {
                    otherwise
                };
                return self.stmts(branch);
            }
            Stmt::For(f) => {
                let iterable = self.expr(&f.iter)?;
                let mut items = self.iterate(&iterable)?;
                if let Some(filter) = &f.filter {
                    self.push_scope();
                    let mut kept = Vec::with_capacity(items.len());
                    let scope = self.vars.len();
                    for item in items {
                        self.vars.truncate(scope);
                        self.bind(&f.target, item.clone())?;
                        if self.expr(filter)?.is_true() {
                            kept.push(item);
                        }
                    }
                    self.pop_scope();
                    items = kept;
                }
                if items.is_empty() {
                    return self.stmts(&f.else_body);
                }
                self.push_scope();
                let count = items.len();
                self.loops.push(LoopState { items, index: 0 });
                let last = self.loops.len() - 1;
                let scope = self.vars.len();
                let mut broke_at_first = false;
                for index in 0..count {
                    // Each iteration starts with an empty scope (a `set` in the body
                    // does not carry over to the next item), as minijinja clears it.
                    self.vars.truncate(scope);
                    self.loops[last].index = index;
                    let item = self.loops[last].items[index].clone();
                    self.bind(&f.target, item)?;
                    if let Flow::Break = self.stmts(&f.body)? {
                        broke_at_first = index == 0;
                        break;
                    }
                }
                self.loops.pop();
                self.pop_scope();
                // minijinja decides "did not iterate" from its item counter, which a
                // `break` in the first iteration leaves at zero: it then runs `else`
                // (jinja2 would not). Kept, so both paths agree.
                if broke_at_first {
                    return self.stmts(&f.else_body);
                }
            }
            Stmt::Set(target, expr) => {
                let value = self.expr(expr)?;
                self.bind(target, value)?;
            }
            Stmt::SetAttr(target, attr, expr) => {
                let ns = self.expr(target)?;
                let value = self.expr(expr)?;
                match ns.downcast_object_ref::<Namespace>() {
                    Some(ns) => ns.set(attr, value),
                    None => return Err(Bail),
                }
            }
            Stmt::Macro(index) => self.define_macro(*index)?,
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Bail => return Err(Bail),
        }
        Ok(Flow::Next)
    }

    /// `{% macro %}`: captures the macro's free variables in the scope's closure
    /// (created on first need, shared by the scope's macros) and binds the macro.
    fn define_macro(&mut self, index: usize) -> Step<()> {
        let program = self.program;
        let def = program.macros.get(index).ok_or(Bail)?;
        if !def.free.is_empty() {
            let closure = match self.scopes.last().ok_or(Bail)?.closure {
                Some(closure) => closure,
                None => {
                    self.closures.push(Closure::new());
                    let closure = self.closures.len() - 1;
                    if let Some(scope) = self.scopes.last_mut() {
                        scope.closure = Some(closure);
                    }
                    closure
                }
            };
            for &name in &def.free {
                if self.closures[closure].iter().any(|(n, _)| *n == name) {
                    continue;
                }
                // An environment function is not copied: lookups inside the macro
                // find it where they find it outside.
                let value = match self.lookup(name) {
                    Some(value) => value.clone(),
                    None if program.is_global(name) => continue,
                    None => Value::UNDEFINED,
                };
                upsert(&mut self.closures[closure], 0, name, value);
            }
        }
        let closure = self.scopes.last().and_then(|s| s.closure);
        let value = Value::from_object(MacroValue { index, closure });
        self.bind(&Target::Var(def.name), value)
    }

    /// `name(args…)` where `name` holds a macro of this render: runs its body in a
    /// scope of its own (arguments, then its closure, then the render context) and
    /// returns the text it wrote.
    fn call_macro(&mut self, callee: Name, pos: &'a [Expr], kw: &'a Keywords) -> Step<Value> {
        let program = self.program;
        let (index, closure) = match self.lookup(callee) {
            Some(value) => match value.downcast_object_ref::<MacroValue>() {
                Some(m) => (m.index, m.closure),
                None => return Err(Bail),
            },
            None => return Err(Bail),
        };
        let def = program.macros.get(index).ok_or(Bail)?;
        if pos.len() > def.args.len() || self.macro_depth >= MAX_MACRO_DEPTH {
            return Err(Bail);
        }
        let mut args = vec![Value::UNDEFINED; def.args.len()];
        for (slot, e) in args.iter_mut().zip(pos) {
            *slot = self.expr(e)?;
        }
        for (key, e) in kw {
            let at = def
                .args
                .iter()
                .position(|&a| *program.names[a as usize] == **key)
                .filter(|&at| at >= pos.len())
                .ok_or(Bail)?;
            if kw.iter().filter(|(k, _)| k == key).count() > 1 {
                return Err(Bail);
            }
            args[at] = self.expr(e)?;
        }
        let captured = match closure {
            Some(c) => self.closures.get(c).ok_or(Bail)?.clone(),
            None => Closure::new(),
        };
        let outer = (
            std::mem::take(&mut self.vars),
            std::mem::replace(
                &mut self.scopes,
                vec![Scope {
                    start: 0,
                    closure: None,
                }],
            ),
            std::mem::take(&mut self.loops),
            std::mem::replace(&mut self.captured, captured),
            std::mem::take(&mut self.out),
        );
        self.macro_depth += 1;
        // Arguments bind last to first; a missing (undefined) one takes its default,
        // which may read the arguments after it.
        let first_default = def.args.len() - def.defaults.len().min(def.args.len());
        for (i, value) in args.into_iter().enumerate().rev() {
            let value = match i.checked_sub(first_default) {
                Some(d) if value.is_undefined() => self.expr(&def.defaults[d])?,
                _ => value,
            };
            self.bind(&Target::Var(def.args[i]), value)?;
        }
        let flow = self.stmts(&def.body)?;
        self.macro_depth -= 1;
        let (vars, scopes, loops, captured, out) = outer;
        self.vars = vars;
        self.scopes = scopes;
        self.loops = loops;
        self.captured = captured;
        let written = std::mem::replace(&mut self.out, out);
        match flow {
            Flow::Next => Ok(Value::from(written)),
            Flow::Break | Flow::Continue => Err(Bail),
        }
    }

    /// The items a `for` loop visits (sequences, maps' keys, iterables).
    pub(super) fn iterate(&mut self, value: &Value) -> Step<Vec<Value>> {
        if is_ours(value)
            || !matches!(
                value.kind(),
                ValueKind::Seq | ValueKind::Map | ValueKind::Iterable
            )
        {
            return Err(Bail);
        }
        // Lists (the usual `messages`) are copied directly, not through an iterator.
        let items: Vec<Value> = match value.downcast_object_ref::<Vec<Value>>() {
            Some(list) => list.clone(),
            None => value.try_iter().map_err(|_| Bail)?.collect(),
        };
        self.charge(items.len())?;
        if items.iter().any(|v| v.kind() == ValueKind::Invalid) {
            return Err(Bail);
        }
        Ok(items)
    }

    fn push_scope(&mut self) {
        self.scopes.push(Scope {
            start: self.vars.len(),
            closure: None,
        });
    }

    fn pop_scope(&mut self) {
        if let Some(scope) = self.scopes.pop() {
            self.vars.truncate(scope.start);
        }
    }

    /// Assigns in the innermost scope.
    fn bind(&mut self, target: &Target, value: Value) -> Step<()> {
        match target {
            Target::Var(name) => {
                let scope = self.scopes.last().ok_or(Bail)?;
                let start = scope.start;
                if let Some(closure) = scope.closure {
                    upsert(&mut self.closures[closure], 0, *name, value.clone());
                }
                upsert(&mut self.vars, start, *name, value);
                Ok(())
            }
            Target::Tuple(targets) => {
                if value.kind() != ValueKind::Seq || value.len() != Some(targets.len()) {
                    return Err(Bail);
                }
                let items: Vec<Value> = value.try_iter().map_err(|_| Bail)?.collect();
                for (target, item) in targets.iter().zip(items) {
                    self.bind(target, item)?;
                }
                Ok(())
            }
        }
    }

    /// A variable: loop and template scopes, then the render context. `None` when
    /// unbound everywhere.
    pub(super) fn lookup(&mut self, name: Name) -> Option<&Value> {
        if let Some(v) = self.vars.iter().rev().find(|(n, _)| *n == name) {
            return Some(&v.1);
        }
        if let Some(v) = self.captured.iter().find(|(n, _)| *n == name) {
            return Some(&v.1);
        }
        let slot = &mut self.context[name as usize];
        if slot.is_none() {
            let found = self
                .ctx
                .get_attr(&self.program.names[name as usize])
                .ok()
                .filter(|v| !v.is_undefined());
            *slot = Some(found);
        }
        slot.as_ref().and_then(Option::as_ref)
    }

    /// An operand without copying constants and variables where possible.
    fn operand(&mut self, expr: &'a Expr) -> Step<Cow<'a, Value>> {
        match expr {
            Expr::Const(v) => {
                self.charge(1)?;
                Ok(Cow::Borrowed(v))
            }
            other => self.expr(other).map(Cow::Owned),
        }
    }

    fn emit(&mut self, value: &Value) -> Step<()> {
        if let Some(s) = value.as_str() {
            self.charge(s.len())?;
            self.out.push_str(s);
            return Ok(());
        }
        if is_ours(value) || value.kind() == ValueKind::Invalid {
            return Err(Bail);
        }
        let start = self.out.len();
        write!(self.out, "{value}").map_err(|_| Bail)?;
        self.charge(self.out.len() - start)
    }

    pub(super) fn expr(&mut self, expr: &'a Expr) -> Step<Value> {
        self.charge(1)?;
        let program = self.program;
        let value = match expr {
            Expr::Const(v) => v.clone(),
            Expr::Var(name) => match self.lookup(*name) {
                Some(v) => v.clone(),
                // An environment function used as a value: left to the interpreter.
                None if program.is_global(*name) => return Err(Bail),
                None => Value::UNDEFINED,
            },
            Expr::Loop(attr) => self.loop_attr(*attr)?,
            Expr::Not(e) => Value::from(!self.expr(e)?.is_true()),
            Expr::Neg(e) => {
                let v = self.expr(e)?;
                match (v.kind(), v.as_i64()) {
                    (ValueKind::Number, Some(i)) if v.is_integer() => {
                        Value::from(i.checked_neg().ok_or(Bail)?)
                    }
                    _ => return Err(Bail),
                }
            }
            Expr::And(a, b) => {
                let left = self.expr(a)?;
                if left.is_true() { self.expr(b)? } else { left }
            }
            Expr::Or(a, b) => {
                let left = self.expr(a)?;
                if left.is_true() { left } else { self.expr(b)? }
            }
            Expr::AddChain(leaves) => self.add_chain(leaves)?,
            Expr::Binary(op, a, b) => {
                let left = self.operand(a)?;
                let right = self.operand(b)?;
                self.binary(*op, &left, &right)?
            }
            Expr::Cond(test, then, otherwise) => {
                if self.expr(test)?.is_true() {
                    self.expr(then)?
                } else {
                    match otherwise {
                        Some(e) => self.expr(e)?,
                        None => Value::UNDEFINED,
                    }
                }
            }
            Expr::AttrIsText(test) => {
                let found = match self.lookup(test.var) {
                    Some(base) => base
                        .downcast_object_ref::<JsonMap>()
                        .map(|map| map.get_str(&test.attr).map(Value::as_str)),
                    None => None,
                };
                match found {
                    // A JSON map with a string (or no) value under the key.
                    Some(Some(Some(s))) => Value::from((s == &*test.text) != test.negated),
                    Some(None) => Value::from(test.negated),
                    _ => self.expr(&test.general)?,
                }
            }
            Expr::Attr(e, name) => {
                let found = match &**e {
                    // The common `message.role`: read the variable in place.
                    Expr::Var(var) => match self.lookup(*var) {
                        Some(base) => match base.downcast_object_ref::<JsonMap>() {
                            Some(map) => Ok(map.get_str(name).cloned().unwrap_or(Value::UNDEFINED)),
                            None if base.downcast_object_ref::<MacroValue>().is_some() => {
                                return Err(Bail);
                            }
                            None => base.get_attr(name),
                        },
                        None if program.is_global(*var) => return Err(Bail),
                        None => Value::UNDEFINED.get_attr(name),
                    },
                    other => {
                        let base = self.expr(other)?;
                        if base.downcast_object_ref::<MacroValue>().is_some() {
                            return Err(Bail);
                        }
                        base.get_attr(name)
                    }
                };
                valid(found.map_err(|_| Bail)?)?
            }
            Expr::Item(e, key) => {
                let base = self.expr(e)?;
                let key = self.operand(key)?;
                if is_ours(&key) || base.downcast_object_ref::<MacroValue>().is_some() {
                    return Err(Bail);
                }
                valid(base.get_item(&key).map_err(|_| Bail)?)?
            }
            Expr::Slice(s) => self.slice(s)?,
            Expr::Test(test, e) => Value::from(self.test(*test, e)?),
            Expr::Filter(filter, input, pos, kw) => {
                let input = self.expr(input)?;
                if is_ours(&input) {
                    return Err(Bail);
                }
                valid(self.filter(*filter, input, pos, kw)?)?
            }
            Expr::Method(receiver, method, args) => {
                let receiver = self.expr(receiver)?;
                let args = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<Step<Vec<_>>>()?;
                valid(self.method(&receiver, *method, &args)?)?
            }
            Expr::Namespace(name, attrs) => {
                if self.lookup(*name).is_some() {
                    return Err(Bail);
                }
                let ns = Namespace::default();
                for (key, e) in attrs {
                    let value = self.expr(e)?;
                    ns.set(key, value);
                }
                Value::from_object(ns)
            }
            Expr::StrftimeNow(name, format) => {
                if self.lookup(*name).is_some() {
                    return Err(Bail);
                }
                let format = self.expr(format)?;
                Value::from(self.clock.strftime_now(format.as_str().ok_or(Bail)?))
            }
            Expr::List(items) => Value::from(
                items
                    .iter()
                    .map(|e| self.expr(e))
                    .collect::<Step<Vec<_>>>()?,
            ),
            Expr::Call(callee, pos, kw) => self.call_macro(*callee, pos, kw)?,
            Expr::Bail => return Err(Bail),
        };
        Ok(value)
    }

    fn loop_attr(&self, attr: LoopAttr) -> Step<Value> {
        let state = self.loops.last().ok_or(Bail)?;
        let (i, len) = (state.index, state.items.len());
        Ok(match attr {
            LoopAttr::Index => Value::from(i + 1),
            LoopAttr::Index0 => Value::from(i),
            LoopAttr::RevIndex => Value::from(len - i),
            LoopAttr::RevIndex0 => Value::from(len - i - 1),
            LoopAttr::First => Value::from(i == 0),
            LoopAttr::Last => Value::from(i + 1 == len),
            LoopAttr::Length => Value::from(len),
            LoopAttr::PrevItem => match i.checked_sub(1) {
                Some(p) => state.items[p].clone(),
                None => Value::UNDEFINED,
            },
            LoopAttr::NextItem => state.items.get(i + 1).cloned().unwrap_or(Value::UNDEFINED),
        })
    }

    fn binary(&mut self, op: BinaryOp, left: &Value, right: &Value) -> Step<Value> {
        if is_ours(left) || is_ours(right) {
            return Err(Bail);
        }
        Ok(match op {
            BinaryOp::Add => match (left.as_str(), right.as_str()) {
                (Some(a), Some(b)) if !left.is_safe() && !right.is_safe() => {
                    self.charge(a.len() + b.len())?;
                    let mut s = String::with_capacity(a.len() + b.len());
                    s.push_str(a);
                    s.push_str(b);
                    Value::from(s)
                }
                _ => {
                    let (a, b) = integers(left, right)?;
                    Value::from(a.checked_add(b).ok_or(Bail)?)
                }
            },
            BinaryOp::Sub => {
                let (a, b) = integers(left, right)?;
                Value::from(a.checked_sub(b).ok_or(Bail)?)
            }
            BinaryOp::Mul => {
                let (a, b) = integers(left, right)?;
                Value::from(a.checked_mul(b).ok_or(Bail)?)
            }
            BinaryOp::Rem => {
                // Python and minijinja agree on `%` when neither side is negative.
                match integers(left, right)? {
                    (a, b) if a >= 0 && b > 0 => Value::from(a % b),
                    _ => return Err(Bail),
                }
            }
            BinaryOp::Concat => {
                if left.as_object().is_some() || right.as_object().is_some() {
                    return Err(Bail);
                }
                let s = format!("{left}{right}");
                self.charge(s.len())?;
                Value::from(s)
            }
            BinaryOp::Eq => Value::from(same(left, right)),
            BinaryOp::Ne => Value::from(!same(left, right)),
            BinaryOp::Lt => Value::from(left < right),
            BinaryOp::Lte => Value::from(left <= right),
            BinaryOp::Gt => Value::from(left > right),
            BinaryOp::Gte => Value::from(left >= right),
            BinaryOp::In => Value::from(self.contains(right, left)?),
            BinaryOp::NotIn => Value::from(!self.contains(right, left)?),
        })
    }

    /// `a + b + …` as a value: strings are appended to one buffer as they come;
    /// anything else starts over with the interpreter's pairwise addition.
    fn add_chain(&mut self, leaves: &'a [Expr]) -> Step<Value> {
        let mut joined = String::new();
        for leaf in leaves {
            let value = self.operand(leaf)?;
            match value.as_str() {
                Some(s) if !value.is_safe() => {
                    self.charge(s.len())?;
                    joined.push_str(s);
                }
                _ => {
                    let values = self.operands(leaves)?;
                    return self.add_all(&values);
                }
            }
        }
        Ok(Value::from(joined))
    }

    fn operands(&mut self, exprs: &'a [Expr]) -> Step<Vec<Cow<'a, Value>>> {
        exprs.iter().map(|e| self.operand(e)).collect()
    }

    /// `values[0] + values[1] + …`: one string when all are strings, else added
    /// pairwise as the interpreter would.
    fn add_all(&mut self, values: &[Cow<'a, Value>]) -> Step<Value> {
        if plain_strings(values) {
            let len = values.iter().map(|v| v.as_str().map_or(0, str::len)).sum();
            self.charge(len)?;
            let mut s = String::with_capacity(len);
            for v in values {
                s.push_str(v.as_str().unwrap_or_default());
            }
            return Ok(Value::from(s));
        }
        let mut iter = values.iter();
        let mut acc = iter.next().ok_or(Bail)?.clone().into_owned();
        for v in iter {
            acc = self.binary(BinaryOp::Add, &acc, v)?;
        }
        Ok(acc)
    }

    /// `needle in container` for strings, sequences and maps.
    fn contains(&mut self, container: &Value, needle: &Value) -> Step<bool> {
        match container.kind() {
            ValueKind::String => {
                let (Some(hay), Some(needle)) = (container.as_str(), needle.as_str()) else {
                    return Err(Bail);
                };
                self.charge(hay.len())?;
                Ok(hay.contains(needle))
            }
            ValueKind::Seq => {
                let iter = container.try_iter().map_err(|_| Bail)?;
                self.charge(container.len().unwrap_or(0))?;
                Ok(iter.into_iter().any(|item| item == *needle))
            }
            ValueKind::Map if container.as_object().is_some() => {
                Ok(!container.get_item(needle).map_err(|_| Bail)?.is_undefined())
            }
            _ => Err(Bail),
        }
    }

    /// Python slicing of a string (by characters) or a sequence.
    fn slice(&mut self, s: &'a SliceExpr) -> Step<Value> {
        let value = self.expr(&s.value)?;
        let mut bound = |e: &'a Option<Expr>| -> Step<Option<i64>> {
            match e {
                None => Ok(None),
                Some(e) => {
                    let v = self.expr(e)?;
                    if v.is_none() {
                        Ok(None)
                    } else if v.is_integer() {
                        v.as_i64().map(Some).ok_or(Bail)
                    } else {
                        Err(Bail)
                    }
                }
            }
        };
        let (start, stop, step) = (bound(&s.start)?, bound(&s.stop)?, bound(&s.step)?);
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(Bail);
        }
        match value.kind() {
            ValueKind::String => {
                let chars: Vec<char> = value.as_str().ok_or(Bail)?.chars().collect();
                self.charge(chars.len())?;
                let picked: String = slice_indices(chars.len(), start, stop, step)
                    .map(|i| chars[i])
                    .collect();
                Ok(Value::from(picked))
            }
            // minijinja slices a list into a lazy iterable (a tuple into a tuple).
            ValueKind::Seq if !is_ours(&value) && !value.is_tuple() => {
                let items: Vec<Value> = value.try_iter().map_err(|_| Bail)?.collect();
                self.charge(items.len())?;
                let picked: Vec<Value> = slice_indices(items.len(), start, stop, step)
                    .map(|i| items[i].clone())
                    .collect();
                Ok(Value::make_object_iterable(picked, |items| {
                    Box::new(items.iter().cloned())
                }))
            }
            _ => Err(Bail),
        }
    }
}

/// Strings that are not marked safe (adding a safe string may escape the other).
fn plain_strings(values: &[Cow<'_, Value>]) -> bool {
    values.iter().all(|v| v.as_str().is_some() && !v.is_safe())
}

/// `==` as minijinja compares (two strings compare by content, whatever their
/// representation; the shortcut skips its coercion step).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_str(), b.as_str()) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// `value`, unless it is an error value (which the interpreter would raise).
pub(super) fn valid(value: Value) -> Step<Value> {
    if value.kind() == ValueKind::Invalid {
        return Err(Bail);
    }
    Ok(value)
}

/// Two integers (not floats, not bools), or bail.
fn integers(a: &Value, b: &Value) -> Step<(i64, i64)> {
    let int = |v: &Value| match v.kind() {
        ValueKind::Number if v.is_integer() => v.as_i64().ok_or(Bail),
        _ => Err(Bail),
    };
    Ok((int(a)?, int(b)?))
}

/// The indices Python's `seq[start:stop:step]` visits (`step` non-zero).
fn slice_indices(
    len: usize,
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
) -> impl Iterator<Item = usize> {
    let len = len as i64;
    let clamp = |i: i64, lo: i64, hi: i64| if i < 0 { (i + len).max(lo) } else { i.min(hi) };
    let (start, stop) = if step > 0 {
        (
            start.map_or(0, |s| clamp(s, 0, len)),
            stop.map_or(len, |s| clamp(s, 0, len)),
        )
    } else {
        (
            start.map_or(len - 1, |s| clamp(s, -1, len - 1)),
            stop.map_or(-1, |s| clamp(s, -1, len - 1)),
        )
    };
    let mut next = Some(start);
    std::iter::from_fn(move || {
        let i = next?;
        let inside = if step > 0 { i < stop } else { i > stop };
        if !inside {
            return None;
        }
        // A step past i64's range ends the walk (`x[1::2**63-1]`).
        next = i.checked_add(step);
        Some(i as usize)
    })
}

#[cfg(test)]
mod tests {
    use super::slice_indices;

    fn py(len: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<usize> {
        slice_indices(len, start, stop, step).collect()
    }

    #[test]
    fn slices_like_python() {
        // Expected lists are Python's `list(range(5))[a:b:c]`.
        assert_eq!(py(5, None, None, -1), [4, 3, 2, 1, 0]);
        assert_eq!(py(5, Some(1), None, 1), [1, 2, 3, 4]);
        assert_eq!(py(5, Some(-2), None, 1), [3, 4]);
        assert_eq!(py(5, None, Some(-1), 1), [0, 1, 2, 3]);
        assert_eq!(py(5, Some(10), None, 1), Vec::<usize>::new());
        assert_eq!(py(5, Some(3), Some(0), -1), [3, 2, 1]);
        assert_eq!(py(5, Some(-10), Some(2), 1), [0, 1]);
        assert_eq!(py(5, None, Some(-10), -1), [4, 3, 2, 1, 0]);
        assert_eq!(py(5, Some(10), None, -2), [4, 2, 0]);
        assert_eq!(py(0, None, None, -1), Vec::<usize>::new());
        assert_eq!(py(5, Some(1), None, i64::MAX), [1]);
        assert_eq!(py(5, None, None, i64::MIN), [4]);
    }
}
