use super::*;
use pretty_assertions::assert_eq;

fn argvs(source: &str) -> Vec<Vec<String>> {
    parse(source, Some("/home/u"))
        .unwrap()
        .into_iter()
        .filter_map(|item| match item {
            Item::Command(command) => Some(
                command
                    .argv
                    .iter()
                    .map(|arg| {
                        if arg.dynamic {
                            format!("?{}", arg.text)
                        } else {
                            arg.text.clone()
                        }
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

#[test]
fn words_are_decoded_as_bash_would() {
    assert_eq!(
        argvs(r#"\rm "r"m 'a b' $'\x41\101\u00e9\n' a\ b ~/x "\$x \"q\"" c\"d"#),
        vec![vec![
            "rm",
            "rm",
            "a b",
            "AAé\n",
            "a b",
            "/home/u/x",
            "$x \"q\"",
            "c\"d"
        ]]
    );
    assert_eq!(
        argvs("ls $HOME *.rs {a,b} \"$x\" x{1..3} {}"),
        vec![vec![
            "ls", "?$HOME", "?*.rs", "?{a,b}", "?\"$x\"", "?x{1..3}", "{}"
        ]]
    );
}

#[test]
fn commands_are_found_everywhere() {
    let found = argvs(
        "a && b | c; (d); { e; }; if f; then g; fi; for x in $(h); do i `j`; done; \
             k <(l) >(m); n=$(o) p; q <<< \"$(r)\"; s() { t; }; case x in y) u;; esac",
    );
    let names: Vec<&str> = found.iter().map(|argv| argv[0].as_str()).collect();
    assert_eq!(
        names,
        vec![
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "o", "p", "q", "r",
            "t", "u"
        ]
    );
    assert_eq!(argvs("cat <<EOF\n$(rm x)\nEOF")[1], vec!["rm", "x"]);
    assert_eq!(argvs("cat <<'EOF'\n$(rm x)\nEOF").len(), 1);
}

#[test]
fn redirects_are_classified() {
    use RedirectKind::{Append, Clobber, Other, Overwrite};
    let items = parse("ls 2>&1 >/dev/null >&2 &>f 1>>g >|h 3>i >&j 2>&-", None).unwrap();
    let redirects: Vec<(String, RedirectKind, String)> = items
        .into_iter()
        .filter_map(|item| match item {
            Item::Redirect(r) => Some((r.operator, r.kind, r.target.text)),
            _ => None,
        })
        .collect();
    let expected = [
        (">&", Other, "1"),
        (">", Overwrite, "/dev/null"),
        (">&", Other, "2"),
        ("&>", Overwrite, "f"),
        (">>", Append, "g"),
        (">|", Clobber, "h"),
        (">", Overwrite, "i"),
        (">&", Overwrite, "j"),
        (">&-", Other, "-"),
    ];
    let expected: Vec<(String, RedirectKind, String)> = expected
        .iter()
        .map(|(o, k, t)| ((*o).to_owned(), *k, (*t).to_owned()))
        .collect();
    assert_eq!(redirects, expected);
}

#[test]
fn what_cannot_be_read_is_a_problem() {
    for source in [
        "ls |",
        "echo 'open",
        "cmd 3<>f",
        "a[$(id)]=1",
        "if true; then",
    ] {
        assert!(parse(source, None).is_err(), "{source}");
    }
    assert!(parse(&"x".repeat(MAX_SOURCE + 1), None).is_err());
    let deep = format!("{}x{}", "$(".repeat(400), ")".repeat(400));
    assert!(parse(&deep, None).is_err());
}
