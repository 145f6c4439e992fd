//! The interactive terminal UI (issue 5). So far: the output blocks and
//! the approval prompt as styled lines, independent of the terminal.

pub mod render;
