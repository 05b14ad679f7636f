//! Reasoning parsers, one module per family of output formats.

pub mod append_think;
pub mod ernie45;
pub mod granite;
pub mod hunyuan_a13b;
pub mod kimi_k3;
pub mod minimax_m3;
pub mod think;
