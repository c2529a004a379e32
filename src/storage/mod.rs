//! On-disk storage building blocks. Each module is a pure codec or a thin I/O layer; the
//! database layer composes them.

pub mod segment;
