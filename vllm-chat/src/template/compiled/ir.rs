//! The compiled form of a template: statements and expressions with every name,
//! filter, test and method resolved when the template is added.

use minijinja::Value;

/// Keyword arguments of a call: `name=expr`, in order.
pub(super) type Keywords = Vec<(Box<str>, Expr)>;

/// Index of a variable name in [`super::Program`]'s name table.
pub(super) type Name = u32;

pub(super) enum Stmt {
    /// Template text, already trimmed by the lexer's whitespace rules.
    Raw(Box<str>),
    /// `{{ expr }}`.
    Emit(Expr),
    /// `{% if %}` / `{% elif %}` / `{% else %}`.
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// `{% for %}`.
    For(Box<ForLoop>),
    /// `{% set name = expr %}` (and tuple unpacking).
    Set(Target, Expr),
    /// `{% set ns.attr = expr %}`.
    SetAttr(Expr, Box<str>, Expr),
    /// `{% break %}`.
    Break,
    /// `{% continue %}`.
    Continue,
    /// `{% macro %}`: defines the macro of this index in [`super::Program`]'s table.
    Macro(usize),
    /// Code the compiled form does not cover: reaching it hands the render back to
    /// the interpreter.
    Bail,
}

/// A macro definition.
pub(super) struct MacroDef {
    pub(super) name: Name,
    pub(super) args: Vec<Name>,
    /// Defaults of the last `defaults.len()` arguments.
    pub(super) defaults: Vec<Expr>,
    pub(super) body: Vec<Stmt>,
    /// Variables captured where the macro is defined (minijinja's closure).
    pub(super) free: Vec<Name>,
}

pub(super) struct ForLoop {
    pub(super) target: Target,
    pub(super) iter: Expr,
    pub(super) filter: Option<Expr>,
    pub(super) body: Vec<Stmt>,
    pub(super) else_body: Vec<Stmt>,
}

/// Left side of an assignment or a loop variable.
pub(super) enum Target {
    Var(Name),
    Tuple(Vec<Target>),
}

pub(super) enum Expr {
    Const(Value),
    Var(Name),
    /// `loop.<attr>` of the innermost loop.
    Loop(LoopAttr),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    /// `a and b` / `a or b`: the deciding operand, as Python returns it.
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `a + b + c …` (left-associative), kept flat so that strings are joined once
    /// (or written straight to the output).
    AddChain(Vec<Expr>),
    /// `a if cond else b` (`else` optional).
    Cond(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    Attr(Box<Expr>, Box<str>),
    /// `var.attr == 'text'` (or `!=`): the most common test of chat templates
    /// (`message.role == 'user'`), compared in place.
    AttrIsText(Box<AttrIsText>),
    Item(Box<Expr>, Box<Expr>),
    Slice(Box<SliceExpr>),
    Test(Test, Box<Expr>),
    /// `input | filter(positional…, keyword=…)`.
    Filter(Filter, Box<Expr>, Vec<Expr>, Keywords),
    Method(Box<Expr>, Method, Vec<Expr>),
    /// `namespace(key=value, …)`, when `namespace` is the builtin.
    Namespace(Name, Keywords),
    /// `strftime_now(format)`, when `strftime_now` is the environment's function.
    StrftimeNow(Name, Box<Expr>),
    List(Vec<Expr>),
    /// `name(args…)`: a call of a variable, which must hold a compiled macro.
    Call(Name, Vec<Expr>, Keywords),
    /// See [`Stmt::Bail`].
    Bail,
}

pub(super) struct AttrIsText {
    pub(super) var: Name,
    pub(super) attr: Box<str>,
    pub(super) text: Box<str>,
    /// `!=` rather than `==`.
    pub(super) negated: bool,
    /// The same test in general form, for values the shortcut does not cover.
    pub(super) general: Expr,
}

pub(super) struct SliceExpr {
    pub(super) value: Expr,
    pub(super) start: Option<Expr>,
    pub(super) stop: Option<Expr>,
    pub(super) step: Option<Expr>,
}

#[derive(Clone, Copy)]
pub(super) enum LoopAttr {
    Index,
    Index0,
    RevIndex,
    RevIndex0,
    First,
    Last,
    Length,
    PrevItem,
    NextItem,
}

#[derive(Clone, Copy)]
pub(super) enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// `%` on non-negative integers.
    Rem,
    Concat,
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
    In,
    NotIn,
}

#[derive(Clone, Copy)]
pub(super) enum Test {
    Defined,
    Undefined,
    None,
    String,
    Mapping,
    Sequence,
    Iterable,
    Number,
    Integer,
    Boolean,
    True,
    False,
}

#[derive(Clone, Copy)]
pub(super) enum Filter {
    ToJson,
    Trim,
    Length,
    String,
    Default,
    Join,
    Items,
    List,
    Select,
    Reject,
    SelectAttr,
    RejectAttr,
}

#[derive(Clone, Copy)]
pub(super) enum Method {
    Strip,
    LStrip,
    RStrip,
    StartsWith,
    EndsWith,
    Split,
    Upper,
    Lower,
    Replace,
    Items,
    Get,
}
