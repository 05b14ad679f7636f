//! Text building blocks shared by the parsers.

mod markers;
mod python;

pub use markers::{MarkerScanner, Piece};
pub use python::{py_is_blank, py_is_space, py_strip};
