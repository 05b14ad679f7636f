//! Lowering minijinja's syntax tree to the compiled form.
//!
//! The tree comes from minijinja's own parser (same syntax configuration, same
//! whitespace rules), so text and structure are exactly what the interpreter runs.
//! A construct this module does not translate becomes [`Stmt::Bail`]-like code: an
//! expression or statement that hands the render back to the interpreter if it is
//! ever reached, so unsupported features cost nothing on the paths that avoid them.

use std::collections::HashMap;

use minijinja::machinery::ast;

use super::closure;
use super::ir::{
    AttrIsText, BinaryOp, Expr, Filter, ForLoop, Keywords, LoopAttr, MacroDef, Method, Name,
    SliceExpr, Stmt, Target, Test,
};

/// Names and code of one template.
pub(super) struct Lowered {
    pub(super) body: Vec<Stmt>,
    pub(super) names: Vec<Box<str>>,
    pub(super) macros: Vec<MacroDef>,
}

/// Lowers a parsed template.
pub(super) fn lower(template: &ast::Stmt<'_>) -> Lowered {
    let mut lowering = Lowering::default();
    let body = match template {
        ast::Stmt::Template(t) => lowering.stmts(&t.children),
        other => vec![lowering.stmt(other)],
    };
    Lowered {
        body,
        names: lowering.names,
        macros: lowering.macros,
    }
}

#[derive(Default)]
struct Lowering {
    names: Vec<Box<str>>,
    ids: HashMap<String, Name>,
    /// Number of `for` loops around the code being lowered.
    loop_depth: usize,
    macros: Vec<MacroDef>,
    /// Lowering a macro body (macros inside macros are left to the interpreter).
    in_macro: bool,
}

impl Lowering {
    fn name(&mut self, id: &str) -> Name {
        if let Some(&n) = self.ids.get(id) {
            return n;
        }
        let n = self.names.len() as Name;
        self.names.push(id.into());
        self.ids.insert(id.to_owned(), n);
        n
    }

    fn stmts(&mut self, stmts: &[ast::Stmt<'_>]) -> Vec<Stmt> {
        stmts.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&mut self, stmt: &ast::Stmt<'_>) -> Stmt {
        match stmt {
            ast::Stmt::Template(t) => Stmt::If(
                Expr::Const(true.into()),
                self.stmts(&t.children),
                Vec::new(),
            ),
            ast::Stmt::EmitRaw(raw) => Stmt::Raw(raw.raw.into()),
            ast::Stmt::EmitExpr(emit) => Stmt::Emit(self.expr(&emit.expr)),
            ast::Stmt::IfCond(cond) => Stmt::If(
                self.expr(&cond.expr),
                self.stmts(&cond.true_body),
                self.stmts(&cond.false_body),
            ),
            ast::Stmt::ForLoop(f) if !f.recursive => {
                let (Some(target), false) = (self.target(&f.target), binds_loop(&f.target)) else {
                    return Stmt::Bail;
                };
                let iter = self.expr(&f.iter);
                let filter = f.filter_expr.as_ref().map(|e| self.expr(e));
                self.loop_depth += 1;
                let body = self.stmts(&f.body);
                self.loop_depth -= 1;
                let else_body = self.stmts(&f.else_body);
                Stmt::For(Box::new(ForLoop {
                    target,
                    iter,
                    filter,
                    body,
                    else_body,
                }))
            }
            ast::Stmt::Set(set) => match &set.target {
                ast::Expr::GetAttr(attr) => Stmt::SetAttr(
                    self.expr(&attr.expr),
                    attr.name.into(),
                    self.expr(&set.expr),
                ),
                target if !binds_loop(target) => match self.target(target) {
                    Some(t) => Stmt::Set(t, self.expr(&set.expr)),
                    None => Stmt::Bail,
                },
                _ => Stmt::Bail,
            },
            ast::Stmt::Macro(m) if !self.in_macro && macro_body_supported(&m.body) => {
                self.macro_def(m)
            }
            ast::Stmt::Break(_) if self.loop_depth > 0 => Stmt::Break,
            ast::Stmt::Continue(_) if self.loop_depth > 0 => Stmt::Continue,
            _ => Stmt::Bail,
        }
    }

    fn macro_def(&mut self, m: &ast::Macro<'_>) -> Stmt {
        let free = closure::free_variables(m);
        // `caller` (call blocks) is left to the interpreter.
        if free.contains("caller") {
            return Stmt::Bail;
        }
        let Some(args) = m
            .args
            .iter()
            .map(|a| match a {
                ast::Expr::Var(v) => Some(self.name(v.id)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
        else {
            return Stmt::Bail;
        };
        let mut free: Vec<&str> = free.into_iter().collect();
        free.sort_unstable();
        let free = free.into_iter().map(|n| self.name(n)).collect();
        let outer_loops = std::mem::replace(&mut self.loop_depth, 0);
        self.in_macro = true;
        let defaults = m.defaults.iter().map(|e| self.expr(e)).collect();
        let body = self.stmts(&m.body);
        self.in_macro = false;
        self.loop_depth = outer_loops;
        let name = self.name(m.name);
        self.macros.push(MacroDef {
            name,
            args,
            defaults,
            body,
            free,
        });
        Stmt::Macro(self.macros.len() - 1)
    }

    fn target(&mut self, target: &ast::Expr<'_>) -> Option<Target> {
        match target {
            ast::Expr::Var(v) => Some(Target::Var(self.name(v.id))),
            // The parser writes `a, b` targets as lists.
            ast::Expr::List(list) => list
                .items
                .iter()
                .map(|item| self.target(item))
                .collect::<Option<Vec<_>>>()
                .map(Target::Tuple),
            _ => None,
        }
    }

    fn boxed(&mut self, expr: &ast::Expr<'_>) -> Box<Expr> {
        Box::new(self.expr(expr))
    }

    fn expr(&mut self, expr: &ast::Expr<'_>) -> Expr {
        match expr {
            ast::Expr::Var(v) if v.id == "loop" => Expr::Bail,
            ast::Expr::Var(v) => Expr::Var(self.name(v.id)),
            ast::Expr::Const(c) => Expr::Const(c.value.clone()),
            ast::Expr::UnaryOp(op) => match op.op {
                ast::UnaryOpKind::Not => Expr::Not(self.boxed(&op.expr)),
                ast::UnaryOpKind::Neg => Expr::Neg(self.boxed(&op.expr)),
            },
            ast::Expr::BinOp(op) if matches!(op.op, ast::BinOpKind::Add) => {
                let mut leaves = Vec::new();
                self.add_leaves(expr, &mut leaves);
                Expr::AddChain(leaves)
            }
            ast::Expr::BinOp(op) => {
                let (left, right) = (self.boxed(&op.left), self.boxed(&op.right));
                let binary = match op.op {
                    ast::BinOpKind::ScAnd => return Expr::And(left, right),
                    ast::BinOpKind::ScOr => return Expr::Or(left, right),
                    ast::BinOpKind::Sub => BinaryOp::Sub,
                    ast::BinOpKind::Mul => BinaryOp::Mul,
                    ast::BinOpKind::Rem => BinaryOp::Rem,
                    ast::BinOpKind::Concat => BinaryOp::Concat,
                    ast::BinOpKind::Eq => BinaryOp::Eq,
                    ast::BinOpKind::Ne => BinaryOp::Ne,
                    ast::BinOpKind::Lt => BinaryOp::Lt,
                    ast::BinOpKind::Lte => BinaryOp::Lte,
                    ast::BinOpKind::Gt => BinaryOp::Gt,
                    ast::BinOpKind::Gte => BinaryOp::Gte,
                    ast::BinOpKind::In => BinaryOp::In,
                    _ => return Expr::Bail,
                };
                attr_is_text(Expr::Binary(binary, left, right))
            }
            ast::Expr::Compare(cmp) if cmp.ops.len() == 1 => {
                let op = &cmp.ops[0];
                let binary = match op.op {
                    ast::CompareOpKind::Eq => BinaryOp::Eq,
                    ast::CompareOpKind::Ne => BinaryOp::Ne,
                    ast::CompareOpKind::Lt => BinaryOp::Lt,
                    ast::CompareOpKind::Lte => BinaryOp::Lte,
                    ast::CompareOpKind::Gt => BinaryOp::Gt,
                    ast::CompareOpKind::Gte => BinaryOp::Gte,
                    ast::CompareOpKind::In => BinaryOp::In,
                    ast::CompareOpKind::NotIn => BinaryOp::NotIn,
                };
                let general = Expr::Binary(binary, self.boxed(&cmp.expr), self.boxed(&op.expr));
                attr_is_text(general)
            }
            ast::Expr::IfExpr(e) => Expr::Cond(
                self.boxed(&e.test_expr),
                self.boxed(&e.true_expr),
                e.false_expr.as_ref().map(|f| self.boxed(f)),
            ),
            ast::Expr::GetAttr(attr) => match &attr.expr {
                ast::Expr::Var(v) if v.id == "loop" => match loop_attr(attr.name) {
                    Some(a) if self.loop_depth > 0 => Expr::Loop(a),
                    _ => Expr::Bail,
                },
                base => Expr::Attr(self.boxed(base), attr.name.into()),
            },
            // `x['name']` looks up exactly what `x.name` does (a map's string key;
            // nothing on strings and sequences), and the attribute path is cheaper.
            ast::Expr::GetItem(item) => match &item.subscript_expr {
                ast::Expr::Const(key) if key.value.as_str().is_some() => match &item.expr {
                    ast::Expr::Var(v) if v.id == "loop" => Expr::Bail,
                    base => Expr::Attr(
                        self.boxed(base),
                        key.value.as_str().unwrap_or_default().into(),
                    ),
                },
                _ => Expr::Item(self.boxed(&item.expr), self.boxed(&item.subscript_expr)),
            },
            ast::Expr::Slice(s) => Expr::Slice(Box::new(SliceExpr {
                value: self.expr(&s.expr),
                start: s.start.as_ref().map(|e| self.expr(e)),
                stop: s.stop.as_ref().map(|e| self.expr(e)),
                step: s.step.as_ref().map(|e| self.expr(e)),
            })),
            ast::Expr::Test(t) if t.args.is_empty() => match test(t.name) {
                Some(test) => Expr::Test(test, self.boxed(&t.expr)),
                None => Expr::Bail,
            },
            ast::Expr::Filter(f) => match (filter(f.name), &f.expr) {
                (Some(filter), Some(input)) => match self.args(&f.args) {
                    Some((pos, kw)) if filter_takes(filter, pos.len(), &kw) => {
                        let input = self.boxed(input);
                        Expr::Filter(filter, input, pos, kw)
                    }
                    _ => Expr::Bail,
                },
                _ => Expr::Bail,
            },
            ast::Expr::Call(call) => self.call(call),
            ast::Expr::List(list) => match list.as_const() {
                Some(value) => Expr::Const(value),
                None => Expr::List(list.items.iter().map(|e| self.expr(e)).collect()),
            },
            ast::Expr::Tuple(tuple) => tuple.as_const().map_or(Expr::Bail, Expr::Const),
            ast::Expr::Map(map) => map.as_const().map_or(Expr::Bail, Expr::Const),
            _ => Expr::Bail,
        }
    }

    /// The operands of a left-nested `+` chain, left to right.
    fn add_leaves(&mut self, expr: &ast::Expr<'_>, leaves: &mut Vec<Expr>) {
        match expr {
            ast::Expr::BinOp(op) if matches!(op.op, ast::BinOpKind::Add) => {
                self.add_leaves(&op.left, leaves);
                leaves.push(self.expr(&op.right));
            }
            other => leaves.push(self.expr(other)),
        }
    }

    /// Positional and keyword arguments, without splats.
    fn args(&mut self, args: &[ast::CallArg<'_>]) -> Option<(Vec<Expr>, Keywords)> {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        for arg in args {
            match arg {
                ast::CallArg::Pos(e) if kw.is_empty() => pos.push(self.expr(e)),
                ast::CallArg::Kwarg(name, e) => kw.push(((*name).into(), self.expr(e))),
                _ => return None,
            }
        }
        Some((pos, kw))
    }

    fn call(&mut self, call: &ast::Call<'_>) -> Expr {
        let Some((pos, kw)) = self.args(&call.args) else {
            return Expr::Bail;
        };
        match &call.expr {
            ast::Expr::GetAttr(attr) if !matches!(&attr.expr, ast::Expr::Var(v) if v.id == "loop") => {
                match method(attr.name) {
                    Some(m) if kw.is_empty() && pos.len() <= m.max_args() => {
                        Expr::Method(self.boxed(&attr.expr), m, pos)
                    }
                    _ => Expr::Bail,
                }
            }
            ast::Expr::Var(v) if v.id == "namespace" && pos.is_empty() => {
                Expr::Namespace(self.name(v.id), kw)
            }
            ast::Expr::Var(v) if v.id == "strftime_now" && kw.is_empty() && pos.len() == 1 => {
                let name = self.name(v.id);
                Expr::StrftimeNow(name, Box::new(pos.into_iter().next().unwrap_or(Expr::Bail)))
            }
            ast::Expr::Var(v) if v.id != "loop" => Expr::Call(self.name(v.id), pos, kw),
            _ => Expr::Bail,
        }
    }
}

/// `var.attr == 'text'` / `!=` (either side) as [`Expr::AttrIsText`]; others unchanged.
fn attr_is_text(expr: Expr) -> Expr {
    let Expr::Binary(op @ (BinaryOp::Eq | BinaryOp::Ne), left, right) = &expr else {
        return expr;
    };
    let ((Expr::Attr(base, attr), Expr::Const(text)) | (Expr::Const(text), Expr::Attr(base, attr))) =
        (&**left, &**right)
    else {
        return expr;
    };
    let (Expr::Var(var), Some(text)) = (&**base, text.as_str()) else {
        return expr;
    };
    Expr::AttrIsText(Box::new(AttrIsText {
        var: *var,
        attr: attr.clone(),
        text: text.into(),
        negated: matches!(op, BinaryOp::Ne),
        general: expr,
    }))
}

/// Statements a compiled macro body may hold (anything else, such as a nested macro
/// or a call block, leaves the whole macro to the interpreter).
fn macro_body_supported(body: &[ast::Stmt<'_>]) -> bool {
    body.iter().all(|s| match s {
        ast::Stmt::EmitExpr(_)
        | ast::Stmt::EmitRaw(_)
        | ast::Stmt::Set(_)
        | ast::Stmt::Continue(_)
        | ast::Stmt::Break(_) => true,
        ast::Stmt::ForLoop(f) => {
            macro_body_supported(&f.body) && macro_body_supported(&f.else_body)
        }
        ast::Stmt::IfCond(i) => {
            macro_body_supported(&i.true_body) && macro_body_supported(&i.false_body)
        }
        _ => false,
    })
}

/// True when an assignment target rebinds `loop` (then `loop.x` would not mean the loop).
fn binds_loop(target: &ast::Expr<'_>) -> bool {
    match target {
        ast::Expr::Var(v) => v.id == "loop",
        ast::Expr::List(list) => list.items.iter().any(binds_loop),
        _ => false,
    }
}

fn loop_attr(name: &str) -> Option<LoopAttr> {
    Some(match name {
        "index" => LoopAttr::Index,
        "index0" => LoopAttr::Index0,
        "revindex" => LoopAttr::RevIndex,
        "revindex0" => LoopAttr::RevIndex0,
        "first" => LoopAttr::First,
        "last" => LoopAttr::Last,
        "length" => LoopAttr::Length,
        "previtem" => LoopAttr::PrevItem,
        "nextitem" => LoopAttr::NextItem,
        _ => return None,
    })
}

pub(super) fn test(name: &str) -> Option<Test> {
    Some(match name {
        "defined" => Test::Defined,
        "undefined" => Test::Undefined,
        "none" => Test::None,
        "string" => Test::String,
        "mapping" => Test::Mapping,
        "sequence" => Test::Sequence,
        "iterable" => Test::Iterable,
        "number" => Test::Number,
        "integer" => Test::Integer,
        "boolean" => Test::Boolean,
        "true" => Test::True,
        "false" => Test::False,
        _ => return None,
    })
}

fn filter(name: &str) -> Option<Filter> {
    Some(match name {
        "tojson" => Filter::ToJson,
        "trim" => Filter::Trim,
        "length" | "count" => Filter::Length,
        "string" => Filter::String,
        "default" | "d" => Filter::Default,
        "join" => Filter::Join,
        "items" => Filter::Items,
        "list" => Filter::List,
        "select" => Filter::Select,
        "reject" => Filter::Reject,
        "selectattr" => Filter::SelectAttr,
        "rejectattr" => Filter::RejectAttr,
        _ => return None,
    })
}

/// Argument shapes each filter is compiled for (others go to the interpreter).
fn filter_takes(filter: Filter, positional: usize, keywords: &[(Box<str>, Expr)]) -> bool {
    match filter {
        Filter::ToJson => positional <= 1,
        Filter::Trim => positional <= 1 && keywords.is_empty(),
        Filter::Length | Filter::String | Filter::Items | Filter::List => {
            positional == 0 && keywords.is_empty()
        }
        Filter::Default => positional <= 2 && keywords.is_empty(),
        Filter::Join => positional <= 1 && keywords.is_empty(),
        Filter::Select | Filter::Reject => keywords.is_empty(),
        Filter::SelectAttr | Filter::RejectAttr => positional >= 1 && keywords.is_empty(),
    }
}

fn method(name: &str) -> Option<Method> {
    Some(match name {
        "strip" => Method::Strip,
        "lstrip" => Method::LStrip,
        "rstrip" => Method::RStrip,
        "startswith" => Method::StartsWith,
        "endswith" => Method::EndsWith,
        "split" => Method::Split,
        "upper" => Method::Upper,
        "lower" => Method::Lower,
        "replace" => Method::Replace,
        "items" => Method::Items,
        "get" => Method::Get,
        _ => return None,
    })
}

impl Method {
    /// Most positional arguments the compiled method accepts.
    fn max_args(self) -> usize {
        match self {
            Method::Upper | Method::Lower | Method::Items => 0,
            Method::Strip
            | Method::LStrip
            | Method::RStrip
            | Method::StartsWith
            | Method::EndsWith => 1,
            Method::Split | Method::Get => 2,
            Method::Replace => 3,
        }
    }
}
