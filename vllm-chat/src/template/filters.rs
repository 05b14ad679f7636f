//! jinja2's generator filters (`map`, `select`, `reject`, `selectattr`, `rejectattr`).
//!
//! jinja2 skips a falsy input (`None | selectattr(...)` yields nothing, where
//! minijinja would fail on a non-iterable) and returns a generator; these wrappers
//! around minijinja's filters do both.

use std::borrow::Cow;

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, State, Value, filters};

use super::value::{Generator, is_none};

/// jinja2 iterates the input only `if value:`.
fn input(value: Value) -> Value {
    if is_none(&value) || !value.is_true() {
        Value::from(Vec::<Value>::new())
    } else {
        value
    }
}

fn generator(items: Vec<Value>) -> Value {
    Value::from_object(Generator(items))
}

pub(crate) fn map(
    state: &mut State,
    value: Value,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    filters::map(state, input(value), args).map(generator)
}

pub(crate) fn select(
    state: &mut State,
    value: Value,
    test: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    filters::select(state, input(value), test, args).map(generator)
}

pub(crate) fn reject(
    state: &mut State,
    value: Value,
    test: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    filters::reject(state, input(value), test, args).map(generator)
}

pub(crate) fn selectattr(
    state: &mut State,
    value: Value,
    attr: Cow<'_, str>,
    test: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    filters::selectattr(state, input(value), attr, test, args).map(generator)
}

pub(crate) fn rejectattr(
    state: &mut State,
    value: Value,
    attr: Cow<'_, str>,
    test: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    filters::rejectattr(state, input(value), attr, test, args).map(generator)
}
