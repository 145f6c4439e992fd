//! `cargo run --example mock-server [-- --port PORT]`: a stand-in model
//! server for trying offcode without a GPU (see README).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test support: a broken mock should fail loudly"
)]

use std::io::Write;
use std::sync::Arc;

#[allow(dead_code)]
mod chunks;
#[allow(dead_code)]
mod demo;
#[allow(dead_code)]
mod server;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut port = "8787".to_owned();
    let mut timing_log = None;
    let mut flavour = demo::Flavour::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().unwrap_or_else(|| usage()),
            "--timing-log" => timing_log = Some(args.next().unwrap_or_else(|| usage())),
            "--no-tool-parser" => flavour.tool_parser = false,
            "--think" => {
                flavour.think = match args.next().as_deref() {
                    Some("tags") => demo::Think::Tags,
                    Some("open") => demo::Think::Open,
                    _ => usage(),
                }
            }
            _ => usage(),
        }
    }
    let server = match server::MockServer::start_on(
        &format!("127.0.0.1:{port}"),
        Arc::new(demo::responder(flavour)),
    ) {
        Ok(server) => server,
        Err(error) => {
            eprintln!("error: cannot listen on 127.0.0.1:{port}: {error}");
            std::process::exit(2);
        }
    };
    if let Some(path) = timing_log {
        server.log_timing_to(std::path::Path::new(&path)).unwrap();
    }
    let mut stdout = std::io::stdout();
    let _ = writeln!(
        stdout,
        "mock model server at {} (model `{}`); Ctrl+C stops it",
        server.base_url(),
        demo::MODEL
    );
    let _ = stdout.flush();
    loop {
        std::thread::park();
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: mock-server [--port PORT] [--timing-log FILE] [--no-tool-parser] [--think tags|open]\n  port 8787 by default (0 picks a free one); --no-tool-parser answers requests with tools\n  like vLLM without --enable-auto-tool-choice; --think makes a thinking model with no\n  reasoning parser (<think> tags, or a lone </think>)"
    );
    std::process::exit(2);
}
