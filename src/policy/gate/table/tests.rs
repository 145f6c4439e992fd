//! How the option parser reads words, program by program.

use super::*;
use crate::policy::shell::Arg;
use pretty_assertions::assert_eq;

fn words(text: &str) -> Vec<Arg> {
    text.split(' ').map(Arg::literal).collect()
}

/// The options a program's words parse to, as `name=value` strings.
fn options(program: &str, text: &str) -> Result<Vec<String>, String> {
    let table = Table::load(&[]).unwrap();
    let reading = table.get(program).unwrap().read(&words(text))?;
    Ok(reading
        .options
        .iter()
        .map(|o| match &o.value {
            Some(v) => format!("{}={}", o.name, v.text),
            None => o.name.clone(),
        })
        .collect())
}

#[test]
fn long_options_take_unique_prefixes_as_getopt_long_does() {
    assert_eq!(
        options("sed", "--in s/a/b/ f"),
        Ok(vec!["--in-place".to_owned()])
    );
    assert_eq!(
        options("sort", "--out=x f"),
        Ok(vec!["--output=x".to_owned()])
    );
    assert_eq!(
        options("ls", "--h"),
        Err("ambiguous option `--h`".to_owned())
    );
    assert_eq!(
        options("cargo", "--rel"),
        Err("unknown option `--rel`".to_owned()),
        "cargo (clap) takes no abbreviations"
    );
}

#[test]
fn short_clusters_attach_values_and_stop_at_them() {
    assert_eq!(
        options("sort", "-rno out f"),
        Ok(vec!["-r".to_owned(), "-n".to_owned(), "-o=out".to_owned()])
    );
    assert_eq!(options("sort", "-oout f"), Ok(vec!["-o=out".to_owned()]));
    assert_eq!(options("head", "-20 f"), Ok(vec!["-N=20".to_owned()]));
    assert_eq!(
        options("ls", "-la -Q"),
        Ok(["-l", "-a", "-Q"].iter().map(|s| (*s).to_owned()).collect())
    );
    assert_eq!(options("ls", "-y"), Err("unknown option `-y`".to_owned()));
}

#[test]
fn perl_dash_zero_takes_only_digits() {
    assert_eq!(
        options("perl", "-0e x"),
        Ok(vec!["-0".to_owned(), "-e=x".to_owned()])
    );
    assert_eq!(
        options("perl", "-0777 -n x.pl"),
        Ok(vec!["-0=777".to_owned(), "-n".to_owned()])
    );
}

#[test]
fn double_dash_and_script_operands_end_the_options() {
    assert_eq!(options("sort", "-- -o f"), Ok(Vec::new()));
    let table = Table::load(&[]).unwrap();
    let reading = table
        .get("python3")
        .unwrap()
        .read(&words("-u s.py -c x"))
        .unwrap();
    assert_eq!(reading.operands, vec![Arg::literal("s.py")]);
    assert_eq!(reading.rest, words("-c x"));
}

#[test]
fn an_unknown_word_that_could_be_an_option_is_refused_where_options_matter() {
    let table = Table::load(&[]).unwrap();
    let dynamic = Arg {
        text: "$x".to_owned(),
        dynamic: true,
    };
    assert!(
        table
            .get("sort")
            .unwrap()
            .read(std::slice::from_ref(&dynamic))
            .is_err()
    );
    assert!(table.get("cat").unwrap().read(&[dynamic]).is_ok());
}

#[test]
fn free_grammars_still_find_effects_by_prefix() {
    let table = Table::load(&[]).unwrap();
    let git = table.get("git").unwrap();
    let reading = git.read(&words("log --out=x")).unwrap();
    let log = git.child(reading.sub.as_deref().unwrap()).unwrap();
    let options = log.read(&reading.rest).unwrap().options;
    assert_eq!(options[0].name, "--output");
    assert_eq!(
        git.read(&words("-C . frobnicate")).unwrap_err(),
        "`frobnicate` is not a subcommand offcode understands (an alias or an extension could run anything)"
    );
}

#[test]
fn a_vouched_entry_extends_the_table_and_bad_ones_are_named() {
    let extra = serde_json::json!({ "mytool": { "class": "read", "short": "v" } });
    let table = Table::load(&[("global".to_owned(), extra)]).unwrap();
    assert!(table.get("mytool").unwrap().read(&words("-v")).is_ok());
    let broken = serde_json::json!({ "bad": { "class": "read", "colour": true } });
    let error = Table::load(&[("global".to_owned(), broken)]).unwrap_err();
    assert!(error.contains("commands entry `bad`"), "{error}");
    assert!(error.contains("colour"), "{error}");
}

#[test]
fn every_built_in_entry_compiles() {
    // The table is read lazily, an entry when its program is first looked
    // up; one that did not compile would make that program ask for ever.
    let raw = super::built_in().unwrap();
    assert!(raw.len() > 100, "{}", raw.len());
    for name in raw.keys() {
        if let Err(error) = super::compile_entry(name, raw) {
            panic!("{error}");
        }
    }
}
