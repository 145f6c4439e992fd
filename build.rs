//! Names the build for `offcode --version`: the commit, the target and the
//! date, so that several copies on one machine can be told apart.
//!
//! The date is the commit's, not the clock's, so two builds of one commit
//! are the same file (`SOURCE_DATE_EPOCH` wins when set). A build from a
//! source tarball without `.git` takes `OFFCODE_COMMIT` when set, else
//! says `unknown`.

use std::process::Command;

fn main() {
    let commit = std::env::var("OFFCODE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // The day in UTC, by git or by `date` (no date crate for one line).
    let date = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => run(
            "date",
            &["-u", "-d", &format!("@{}", epoch.trim()), "+%Y-%m-%d"],
        ),
        Err(_) => git(&[
            "show",
            "-s",
            "--date=format-local:%Y-%m-%d",
            "--format=%cd",
            "HEAD",
        ]),
    }
    .unwrap_or_else(|| "unknown".to_owned());
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=OFFCODE_COMMIT={commit}");
    println!("cargo:rustc-env=OFFCODE_BUILD_DATE={date}");
    println!("cargo:rustc-env=OFFCODE_TARGET={target}");
    println!("cargo:rerun-if-env-changed=OFFCODE_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // A new commit or checkout moves HEAD or the branch it names.
    // (A worktree has its own HEAD; the branches are the common dir's.)
    if let (Some(own), Some(common)) = (
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        let (own, common) = (std::path::Path::new(&own), std::path::Path::new(&common));
        println!("cargo:rerun-if-changed={}", own.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(branch).display());
        }
        println!(
            "cargo:rerun-if-changed={}",
            common.join("packed-refs").display()
        );
    }
}

/// What git prints for `args` in this checkout, trimmed; `None` without
/// git or a repository.
fn git(args: &[&str]) -> Option<String> {
    run("git", args)
}

/// What `program` prints for `args` (in UTC), trimmed; `None` when it
/// cannot run, fails or prints nothing.
fn run(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .env("TZ", "UTC")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
