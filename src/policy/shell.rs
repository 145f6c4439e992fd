//! Finds every simple command and redirect in a bash command line.
//!
//! The line is parsed with tree-sitter-bash and walked node by node against
//! an allowlist of node kinds. A parse error, a missing token or a kind the
//! walker does not know makes the whole line a [`Problem`], so the gate can
//! fail closed. Words are decoded the way bash would before expansion
//! (quotes, backslashes, `$'...'`, a leading `~`); anything only known at run
//! time (parameters, substitutions, globs, brace expansion) is marked
//! dynamic and keeps its source text.

use tree_sitter::{Node, Parser};

mod arith;
mod checks;
mod words;

pub use arith::{Reading, comparison_operand, expression, is_name, name_operand};

use words::{decode_ansi_c, decode_double_quoted, decode_unquoted};

/// Longest command line the gate reads; longer ones are refused as too big.
pub const MAX_SOURCE: usize = 64 * 1024;
/// Deepest syntax tree walked.
const MAX_TREE_DEPTH: usize = 256;
/// Most simple commands checked in one line (nested code strings included).
pub const MAX_COMMANDS: usize = 1_000;

/// Why a command line could not be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem(pub String);

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// The decoded text, or the source text when the word is dynamic.
    pub text: String,
    /// Known only at run time: expansions, substitutions, globs, braces.
    pub dynamic: bool,
}

impl Arg {
    /// A literal word.
    pub fn literal(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            dynamic: false,
        }
    }

    /// The decoded text when the word is fully known.
    pub fn known(&self) -> Option<&str> {
        (!self.dynamic).then_some(self.text.as_str())
    }
}

/// `NAME=value` before a command, in `export`/`declare`, or on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The variable's name.
    pub name: String,
    /// The value.
    pub value: Arg,
}

/// A simple command: assignments, then words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Assignments written before the command name.
    pub assignments: Vec<Assignment>,
    /// The command name and its arguments; empty for a bare assignment.
    pub argv: Vec<Arg>,
}

/// What a redirect does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `>`, `N>`, `&>`, `>& file`: creates or truncates.
    Overwrite,
    /// `>|`: truncates even under noclobber.
    Clobber,
    /// `>>`, `&>>`: appends.
    Append,
    /// `<`, `<&`, fd duplication and closing: no file is written.
    Other,
}

/// An output or input redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator as written.
    pub operator: String,
    /// What it does.
    pub kind: RedirectKind,
    /// The target word.
    pub target: Arg,
}

/// What the walker found, in the order bash meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A simple command.
    Command(SimpleCommand),
    /// A redirection.
    Redirect(Redirect),
    /// An assignment outside any command (`X=1;`, `export X=1`).
    Assignment(Assignment),
    /// A function definition, by name.
    Function(String),
    /// A place where bash evaluates a variable's value as code outside
    /// arithmetic (`${!x}`, `${x@P}`, `[[ -v $x ]]`), or an expansion the
    /// walker cannot read: never plain.
    Late {
        /// The construct, as written (shortened).
        construct: String,
        /// What bash does with it.
        why: String,
    },
    /// A place where bash evaluates arithmetic, and what it reads there.
    Arithmetic(Arithmetic),
    /// A variable set by name to a value the line does not spell out (`for
    /// NAME in ...`, `select NAME`, `${NAME:=word}`).
    Sets(String),
    /// A variable a loop sets to numbers the line spells out (`for i in 1
    /// 2 3`, `for i in {1..5}`).
    Counts(String),
}

/// A place where bash evaluates arithmetic (`$((...))`, `((...))`, a
/// subscript, `${P:OFFSET}`, `[[ A -eq B ]]`...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arithmetic {
    /// The construct, as written (shortened).
    pub construct: String,
    /// What its expression reads and assigns.
    pub reading: Reading,
}

/// Parses `source` and lists what it runs.
pub fn parse(source: &str, home: Option<&str>) -> Result<Vec<Item>, Problem> {
    if source.len() > MAX_SOURCE {
        return Err(Problem(format!(
            "the command is longer than {} KiB",
            MAX_SOURCE / 1024
        )));
    }
    if source.contains('\0') {
        return Err(Problem("the command contains a NUL byte".to_owned()));
    }
    if let Some(at) = joined_word(source) {
        return Err(Problem(format!(
            "a line continuation inside a word, which bash joins before it reads the line (near `{}`)",
            short(&source[at.saturating_sub(20)..at])
        )));
    }
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .map_err(|e| Problem(format!("the shell grammar could not be loaded: {e}")))?;
    let tree = parser
        .parse(source, None)
        .ok_or_else(|| Problem("the shell parser gave up".to_owned()))?;
    let root = tree.root_node();
    let mut walker = Walker {
        source: source.as_bytes(),
        home,
        items: Vec::new(),
    };
    walker.visit(root, 0)?;
    Ok(walker.items)
}

/// Where a backslash-newline joins two parts of one word (`$\⏎[x]`,
/// `${PWD\⏎:x}`): bash removes it before reading the line, tree-sitter
/// does not, so they would read different lines. One after a blank (a long
/// command split over lines) is read alike.
fn joined_word(source: &str) -> Option<usize> {
    let bytes = source.as_bytes();
    (1..bytes.len()).find(|&at| {
        if bytes[at] != b'\n' || bytes[at - 1] != b'\\' {
            return false;
        }
        let slashes = bytes[..at]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        let before = bytes[..at - slashes].last();
        slashes % 2 == 1 && before.is_some_and(|b| !b.is_ascii_whitespace())
    })
}

/// Whether `node` stands inside arithmetic (`for ((...))`, `((...))`,
/// `$((...))`).
fn in_arithmetic(node: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(parent) = current {
        match parent.kind() {
            "c_style_for_statement" | "arithmetic_expansion" => return true,
            "compound_statement" => {
                return parent.child(0).is_some_and(|open| open.kind() == "((");
            }
            "command" | "program" | "do_group" => return false,
            _ => current = parent.parent(),
        }
    }
    false
}

struct Walker<'a> {
    source: &'a [u8],
    home: Option<&'a str>,
    items: Vec<Item>,
}

/// Kinds whose children are walked with nothing else to do.
const CONTAINERS: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "redirected_statement",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "case_item",
    "do_group",
    "function_definition",
    "negated_command",
    "test_command",
    "command_substitution",
    "process_substitution",
    "heredoc_body",
    "heredoc_redirect",
    "herestring_redirect",
    "variable_assignments",
    "array",
    "expansion",
    "arithmetic_expansion",
    "binary_expression",
    "unary_expression",
    "ternary_expression",
    "postfix_expression",
    "parenthesized_expression",
    "subscript",
    "concatenation",
    "string",
    "translated_string",
    "brace_expression",
    "command_name",
    "number",
    "simple_expansion",
];

/// Kinds with nothing inside that can run.
const LEAVES: &[&str] = &[
    "word",
    "raw_string",
    "ansi_c_string",
    "string_content",
    "variable_name",
    "special_variable_name",
    "heredoc_content",
    "heredoc_end",
    "file_descriptor",
    "comment",
    "test_operator",
    "extglob_pattern",
];

impl<'a> Walker<'a> {
    fn text(&self, node: Node<'_>) -> &'a str {
        std::str::from_utf8(&self.source[node.byte_range()]).unwrap_or("")
    }

    fn visit(&mut self, node: Node<'_>, depth: usize) -> Result<(), Problem> {
        if depth > MAX_TREE_DEPTH {
            return Err(Problem("the command is nested too deeply".to_owned()));
        }
        if node.is_error() || node.is_missing() {
            return Err(Problem(format!(
                "bash would not parse it as written (near `{}`)",
                short(self.text(node))
            )));
        }
        if !node.is_named() {
            return Ok(());
        }
        let kind = node.kind();
        match kind {
            "command" => {
                let command = self.command(node)?;
                // Substitutions in assignment values run first, then the
                // ones inside the words; redirects are looked at last.
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                for child in &children {
                    if child.kind() == "variable_assignment" {
                        self.children(*child, depth + 1)?;
                    }
                }
                self.items.push(Item::Command(command));
                for child in &children {
                    if !matches!(
                        child.kind(),
                        "file_redirect" | "herestring_redirect" | "variable_assignment"
                    ) {
                        self.visit(*child, depth + 1)?;
                    }
                }
                for child in children {
                    if matches!(child.kind(), "file_redirect" | "herestring_redirect") {
                        self.visit(child, depth + 1)?;
                    }
                }
                Ok(())
            }
            "file_redirect" => {
                self.children(node, depth)?;
                let redirect = self.redirect(node)?;
                self.items.push(Item::Redirect(redirect));
                Ok(())
            }
            // `for ((i = 0; ...))`: an arithmetic assignment, whose value is
            // the number its expression gives (read as arithmetic there).
            "variable_assignment" if in_arithmetic(node) => self.children(node, depth),
            "variable_assignment" => {
                let assignment = self.assignment(node)?;
                self.children(node, depth)?;
                self.items.push(Item::Assignment(assignment));
                Ok(())
            }
            "declaration_command" | "unset_command" => self.declaration(node, depth),
            "function_definition" => {
                if let Some(name) = node.child_by_field_name("name") {
                    self.items.push(Item::Function(self.text(name).to_owned()));
                }
                self.children(node, depth)
            }
            "regex" => self.pattern(node),
            "heredoc_start" => self.heredoc_delimiter(node),
            _ if CONTAINERS.contains(&kind) => self.container(node, depth),
            // Whatever node tree-sitter made of it, text that still holds a
            // substitution was not walked (backticks in an expansion's
            // operand are a `word`): bash would run it, so not understood.
            "word" | "string_content" | "extglob_pattern" => self.leaf(node),
            _ if LEAVES.contains(&kind) => Ok(()),
            other => Err(Problem(format!(
                "the checker does not understand bash's `{other}` construct (`{}`)",
                short(self.text(node))
            ))),
        }
    }

    /// `declare`, `local`, `export`, `unset`... with their words: a
    /// command too, so rules can look at the options (`declare -n r=PATH`).
    fn declaration(&mut self, node: Node<'_>, depth: usize) -> Result<(), Problem> {
        // `declare -n r=PATH`: the keyword and its words are a
        // command too, so rules can look at the options.
        let keyword = node.child(0).map_or("declare", |k| k.kind()).to_owned();
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        let mut argv = vec![Arg::literal(&keyword)];
        for child in &children {
            // A quoted or expanded word (`declare "$x=bin"`) is read
            // as a word: known only at run time if it expands.
            argv.push(match child.kind() {
                "variable_assignment" | "variable_name" => Arg::literal(self.text(*child)),
                _ => self.word(*child, false),
            });
        }
        // `declare -p NAME` prints the variable; it sets nothing.
        let printing = argv
            .iter()
            .filter_map(Arg::known)
            .any(|word| word.starts_with('-') && word.contains('p'));
        self.items.push(Item::Command(SimpleCommand {
            assignments: Vec::new(),
            argv,
        }));
        for child in children {
            self.visit(child, depth + 1)?;
            if child.kind() == "variable_name" && !printing {
                // `export PAGER` exports a value set elsewhere: the
                // name alone is enough to look at.
                self.items.push(Item::Assignment(Assignment {
                    name: self.text(child).to_owned(),
                    value: Arg {
                        text: String::new(),
                        dynamic: true,
                    },
                }));
            }
        }
        Ok(())
    }

    fn children(&mut self, node: Node<'_>, depth: usize) -> Result<(), Problem> {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.visit(child, depth + 1)?;
        }
        Ok(())
    }

    fn command(&self, node: Node<'_>) -> Result<SimpleCommand, Problem> {
        let mut command = SimpleCommand {
            assignments: Vec::new(),
            argv: Vec::new(),
        };
        let mut cursor = node.walk();
        for (index, child) in node.children(&mut cursor).enumerate() {
            let field = node.field_name_for_child(u32::try_from(index).unwrap_or(u32::MAX));
            match (field, child.kind()) {
                (_, "variable_assignment") => command.assignments.push(self.assignment(child)?),
                (Some("name"), _) => {
                    let name = child.named_child(0).unwrap_or(child);
                    command.argv.push(self.word(name, true));
                }
                (Some("argument"), _) => command.argv.push(self.word(child, false)),
                (Some("redirect"), _) | (_, "file_redirect" | "herestring_redirect") => {}
                (_, "subshell") => {
                    return Err(Problem(format!(
                        "the checker does not understand `{}`",
                        short(self.text(node))
                    )));
                }
                _ if !child.is_named() => {}
                (_, other) => {
                    return Err(Problem(format!(
                        "the checker does not understand `{other}` in `{}`",
                        short(self.text(node))
                    )));
                }
            }
        }
        Ok(command)
    }

    fn assignment(&self, node: Node<'_>) -> Result<Assignment, Problem> {
        let name = node
            .child_by_field_name("name")
            .ok_or_else(|| Problem(format!("odd assignment `{}`", short(self.text(node)))))?;
        if name.kind() != "variable_name" {
            return Err(Problem(format!(
                "the checker does not understand the assignment `{}`",
                short(self.text(node))
            )));
        }
        let value = node.child_by_field_name("value").map_or_else(
            || Arg::literal(""),
            |value| {
                if value.kind() == "array" {
                    Arg {
                        text: self.text(value).to_owned(),
                        dynamic: true,
                    }
                } else {
                    self.word(value, false)
                }
            },
        );
        Ok(Assignment {
            name: self.text(name).to_owned(),
            value,
        })
    }

    fn redirect(&self, node: Node<'_>) -> Result<Redirect, Problem> {
        let mut operator = String::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !child.is_named() {
                operator.push_str(child.kind());
            }
        }
        let target = match node.child_by_field_name("destination") {
            Some(destination) => self.word(destination, false),
            // `>&-` and `<&-` close a descriptor.
            None if operator == ">&-" || operator == "<&-" => Arg::literal("-"),
            None => {
                return Err(Problem(format!(
                    "a redirect without a target: `{}`",
                    short(self.text(node))
                )));
            }
        };
        let kind = match operator.as_str() {
            ">" | "&>" => RedirectKind::Overwrite,
            ">|" => RedirectKind::Clobber,
            ">>" | "&>>" => RedirectKind::Append,
            // `>&2`, `>&-` duplicate or close; `>& file` writes the file.
            ">&" | "&>&" => match target.known() {
                Some(text) if is_fd_word(text) => RedirectKind::Other,
                _ => RedirectKind::Overwrite,
            },
            "<" | "<&" | "<&-" | ">&-" => RedirectKind::Other,
            other => {
                return Err(Problem(format!(
                    "the checker does not understand the redirect `{other}`"
                )));
            }
        };
        Ok(Redirect {
            operator,
            kind,
            target,
        })
    }

    /// Decodes a word. `name` is true in command-name position.
    fn word(&self, node: Node<'_>, name: bool) -> Arg {
        let mut out = Arg {
            text: String::new(),
            dynamic: false,
        };
        self.decode(node, &mut out, true, &mut false);
        if out.dynamic || (name && out.text.is_empty()) {
            out.dynamic = true;
            self.text(node).clone_into(&mut out.text);
        }
        out
    }

    /// `brace` carries an unquoted `{` seen earlier in the same word.
    fn decode(&self, node: Node<'_>, out: &mut Arg, first: bool, brace: &mut bool) {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" if node.named_child_count() == 0 => {
                decode_unquoted(text, first, self.home, out, brace);
            }
            "raw_string" => {
                out.text.push_str(
                    text.strip_prefix('\'')
                        .and_then(|t| t.strip_suffix('\''))
                        .unwrap_or(text),
                );
            }
            "ansi_c_string" => match decode_ansi_c(text) {
                Some(decoded) => out.text.push_str(&decoded),
                None => out.dynamic = true,
            },
            "string" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "\"" => {}
                        "string_content" => decode_double_quoted(self.text(child), out),
                        "$" => out.text.push('$'),
                        _ => out.dynamic = true,
                    }
                }
            }
            "translated_string" => match node.named_child(0) {
                Some(inner) => self.decode(inner, out, false, brace),
                None => out.dynamic = true,
            },
            "concatenation" => {
                let mut cursor = node.walk();
                for (index, child) in node.children(&mut cursor).enumerate() {
                    self.decode(child, out, first && index == 0, brace);
                }
            }
            _ => out.dynamic = true,
        }
    }
}

fn is_fd_word(text: &str) -> bool {
    text == "-" || (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
}

pub(super) fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 60 {
        let cut: String = line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests;
