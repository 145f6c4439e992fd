//! The integration test binary: every file in `tests/` is a module here.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::missing_panics_doc,
    reason = "helpers of tests fail loudly, like the tests"
)]

mod abort;
mod agent;
mod agents;
mod appliance;
mod attacks;
mod channels;
mod cli;
mod client;
mod confine;
mod doctor;
mod escape;
mod fixtures;
mod git_later;
mod git_pointers;
mod grounded;
mod hard_links;
mod host_channels;
mod interrupted;
mod layers;
mod layout;
mod mcp;
mod mcp_wire;
mod messages;
mod network;
mod opencode;
mod ordinary;
mod own_binary;
mod policy;
mod providers;
mod results;
mod sandbox;
mod servers;
mod small;
mod subagents;
mod support;
mod trust;
mod ui_lines;
mod ui_tmux;
mod undo;
mod undo_flood;
mod undo_folders;
mod validate;
