//! The variables a macro captures, computed as minijinja computes them.
//!
//! minijinja gives each macro a closure: the variables its body reads before
//! assigning them (`meta::find_macro_closure`), captured where the macro is defined.
//! Which names are captured decides what a macro sees, so this is a port of that
//! walk, not an approximation of it.

use std::collections::HashSet;

use minijinja::machinery::ast;

/// Names a macro body reads before assigning them (its arguments are assigned).
pub(super) fn free_variables<'a>(m: &ast::Macro<'a>) -> HashSet<&'a str> {
    let mut tracker = Tracker {
        free: HashSet::new(),
        assigned: vec![HashSet::new()],
    };
    tracker.visit_macro(m, false);
    tracker.free
}

struct Tracker<'a> {
    free: HashSet<&'a str>,
    /// Assignments per nested scope.
    assigned: Vec<HashSet<&'a str>>,
}

impl<'a> Tracker<'a> {
    fn is_assigned(&self, name: &str) -> bool {
        self.assigned.iter().any(|scope| scope.contains(name))
    }

    fn assign(&mut self, name: &'a str) {
        if let Some(scope) = self.assigned.last_mut() {
            scope.insert(name);
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.assigned.push(HashSet::new());
        f(self);
        self.assigned.pop();
    }

    fn visit_macro(&mut self, m: &ast::Macro<'a>, declare_caller: bool) {
        if declare_caller {
            self.assign("caller");
        }
        m.args.iter().for_each(|arg| self.assign_target(arg));
        m.defaults.iter().for_each(|e| self.expr(e));
        m.body.iter().for_each(|s| self.stmt(s));
    }

    fn assign_target(&mut self, target: &ast::Expr<'a>) {
        match target {
            ast::Expr::Var(v) => self.assign(v.id),
            ast::Expr::List(l) => l.items.iter().for_each(|x| self.assign_target(x)),
            ast::Expr::Tuple(t) => t.items.iter().for_each(|x| self.assign_target(x)),
            _ => {}
        }
    }

    fn args(&mut self, args: &[ast::CallArg<'a>]) {
        for arg in args {
            match arg {
                ast::CallArg::Pos(e)
                | ast::CallArg::Kwarg(_, e)
                | ast::CallArg::PosSplat(e)
                | ast::CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }

    fn opt(&mut self, e: &Option<ast::Expr<'a>>) {
        if let Some(e) = e {
            self.expr(e);
        }
    }

    fn expr(&mut self, e: &ast::Expr<'a>) {
        match e {
            ast::Expr::Var(v) => {
                // The first read counts; later reads see it as known.
                if !self.is_assigned(v.id) {
                    self.free.insert(v.id);
                    self.assign(v.id);
                }
            }
            ast::Expr::Const(_) => {}
            ast::Expr::UnaryOp(u) => self.expr(&u.expr),
            ast::Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            ast::Expr::Compare(c) => {
                self.expr(&c.expr);
                c.ops.iter().for_each(|op| self.expr(&op.expr));
            }
            ast::Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                self.expr(&i.true_expr);
                self.opt(&i.false_expr);
            }
            ast::Expr::Filter(f) => {
                self.opt(&f.expr);
                self.args(&f.args);
            }
            ast::Expr::Test(t) => {
                self.expr(&t.expr);
                self.args(&t.args);
            }
            ast::Expr::GetAttr(a) => self.expr(&a.expr),
            ast::Expr::GetItem(i) => {
                self.expr(&i.expr);
                self.expr(&i.subscript_expr);
            }
            ast::Expr::Slice(s) => {
                self.opt(&s.start);
                self.opt(&s.stop);
                self.opt(&s.step);
            }
            ast::Expr::Call(c) => {
                self.expr(&c.expr);
                self.args(&c.args);
            }
            ast::Expr::List(l) => l.items.iter().for_each(|x| self.expr(x)),
            ast::Expr::Tuple(t) => t.items.iter().for_each(|x| self.expr(x)),
            ast::Expr::Map(m) => m.keys.iter().zip(&m.values).for_each(|(k, v)| {
                self.expr(k);
                self.expr(v);
            }),
        }
    }

    fn stmt(&mut self, s: &ast::Stmt<'a>) {
        match s {
            ast::Stmt::Template(t) => {
                self.assign("self");
                t.children.iter().for_each(|c| self.stmt(c));
            }
            ast::Stmt::EmitExpr(e) => self.expr(&e.expr),
            ast::Stmt::EmitRaw(_) => {}
            ast::Stmt::ForLoop(f) => {
                self.scoped(|t| {
                    t.assign("loop");
                    t.expr(&f.iter);
                    t.assign_target(&f.target);
                    t.opt(&f.filter_expr);
                    f.body.iter().for_each(|s| t.stmt(s));
                });
                self.scoped(|t| f.else_body.iter().for_each(|s| t.stmt(s)));
            }
            ast::Stmt::IfCond(i) => {
                self.expr(&i.expr);
                self.scoped(|t| i.true_body.iter().for_each(|s| t.stmt(s)));
                self.scoped(|t| i.false_body.iter().for_each(|s| t.stmt(s)));
            }
            ast::Stmt::WithBlock(w) => self.scoped(|t| {
                for (target, e) in &w.assignments {
                    t.assign_target(target);
                    t.expr(e);
                }
                w.body.iter().for_each(|s| t.stmt(s));
            }),
            ast::Stmt::Set(set) => {
                self.assign_target(&set.target);
                self.expr(&set.expr);
            }
            ast::Stmt::AutoEscape(a) => self.scoped(|t| a.body.iter().for_each(|s| t.stmt(s))),
            ast::Stmt::FilterBlock(f) => self.scoped(|t| f.body.iter().for_each(|s| t.stmt(s))),
            ast::Stmt::SetBlock(set) => {
                self.assign_target(&set.target);
                self.scoped(|t| set.body.iter().for_each(|s| t.stmt(s)));
            }
            ast::Stmt::Block(b) => self.scoped(|t| {
                t.assign("super");
                b.body.iter().for_each(|s| t.stmt(s));
            }),
            ast::Stmt::Extends(_) | ast::Stmt::Include(_) => {}
            ast::Stmt::Import(i) => self.assign_target(&i.name),
            ast::Stmt::FromImport(i) => i
                .names
                .iter()
                .for_each(|(name, alias)| self.assign_target(alias.as_ref().unwrap_or(name))),
            ast::Stmt::Macro(m) => {
                self.assign(m.name);
                self.scoped(|t| t.visit_macro(m, true));
            }
            ast::Stmt::CallBlock(c) => {
                self.expr(&c.call.expr);
                self.args(&c.call.args);
                self.scoped(|t| t.visit_macro(&c.macro_decl, true));
            }
            ast::Stmt::Continue(_) | ast::Stmt::Break(_) => {}
            ast::Stmt::Do(d) => {
                self.expr(&d.call.expr);
                self.args(&d.call.args);
            }
        }
    }
}
