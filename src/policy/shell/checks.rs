//! Where tree-sitter and bash may read a line differently, and the
//! places bash evaluates values later: checks the walker makes on the way.

use tree_sitter::Node;

use super::{Item, Problem, Walker, short};

impl Walker<'_> {
    /// Here-document delimiters bash and tree-sitter read alike: a plain
    /// word, or one quoted whole. `<<E"O"F` ends at `EOF` for bash.
    pub(super) fn heredoc_delimiter(&self, node: Node<'_>) -> Result<(), Problem> {
        let text = self.text(node);
        let inner = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .or_else(|| text.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
            .unwrap_or(text);
        if inner.is_empty()
            || !inner
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(Problem(format!(
                "the checker cannot be sure where the here-document `{}` ends",
                short(text)
            )));
        }
        Ok(())
    }
    /// A node that holds others: notes where it evaluates values later or
    /// sets variables from data, then walks its children.
    pub(super) fn container(&mut self, node: Node<'_>, depth: usize) -> Result<(), Problem> {
        let text = self.text(node);
        // bash joins `\` + newline in a here-document before it looks for
        // the delimiter; nested escaped backticks are substitutions bash
        // runs and tree-sitter reads as text.
        if node.kind() == "heredoc_body" && text.contains("\\\n") {
            return Err(Problem(
                "a line continuation inside a here-document, which can end it early".to_owned(),
            ));
        }
        if node.kind() == "command_substitution" && text.starts_with('`') && text.contains("\\`") {
            return Err(Problem(format!(
                "nested backticks the checker cannot read (`{}`)",
                short(text)
            )));
        }
        if let Some(late) = self.late(node) {
            self.items.push(Item::Late(late));
        }
        if node.kind() == "for_statement" {
            self.items
                .push(Item::Taint("a `for` loop variable".to_owned()));
            if let Some(variable) = node.child_by_field_name("variable") {
                self.items.push(Item::Sets(self.text(variable).to_owned()));
            }
        }
        self.children(node, depth)
    }
    /// A pattern (`${x#PATTERN}`, `=~`), which tree-sitter leaves unparsed:
    /// a substitution inside it cannot be checked.
    /// A word or string part whose text holds an unescaped backtick or
    /// `$(`: a substitution the walk did not see.
    pub(super) fn leaf(&self, node: Node<'_>) -> Result<(), Problem> {
        let text = self.text(node);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let hidden = match c {
                '\\' => {
                    chars.next();
                    false
                }
                '`' => true,
                '$' => chars.peek() == Some(&'('),
                _ => false,
            };
            if hidden {
                return Err(Problem(format!(
                    "a substitution the checker cannot place (`{}`)",
                    short(text)
                )));
            }
        }
        Ok(())
    }

    pub(super) fn pattern(&self, node: Node<'_>) -> Result<(), Problem> {
        let text = self.text(node);
        if ["$(", "`", "${", "$["]
            .iter()
            .any(|code| text.contains(code))
        {
            return Err(Problem(format!(
                "the checker cannot read a substitution inside a pattern (`{}`)",
                short(text)
            )));
        }
        Ok(())
    }
    /// Whether `node` makes bash evaluate a value as an expression.
    pub(super) fn late(&self, node: Node<'_>) -> Option<String> {
        let text = self.text(node);
        let found = match node.kind() {
            "arithmetic_expansion" | "c_style_for_statement" => true,
            "compound_statement" => text.starts_with("(("),
            "test_command" => {
                let mut cursor = node.walk();
                let mut operators = Vec::new();
                collect_operators(node, &mut cursor, self.source, &mut operators);
                operators.iter().any(|op| {
                    matches!(
                        op.as_str(),
                        "-v" | "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"
                    )
                })
            }
            // `${!x}`, `${x@P}`, and `${x:OFFSET}` (an arithmetic offset).
            "expansion" => {
                let inner = text.trim_start_matches("${");
                let after_name =
                    inner.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
                text.starts_with("${!")
                    || text.contains("@P")
                    || (after_name.starts_with(':')
                        && !after_name[1..].starts_with(['-', '=', '?', '+']))
            }
            "subscript" => node
                .child_by_field_name("index")
                .is_some_and(|index| index.kind() != "number"),
            _ => false,
        };
        found.then(|| short(text))
    }
}

/// The test operators under a `[[ ... ]]`.
fn collect_operators<'t>(
    node: Node<'t>,
    cursor: &mut tree_sitter::TreeCursor<'t>,
    source: &[u8],
    out: &mut Vec<String>,
) {
    let children: Vec<Node<'t>> = node.children(cursor).collect();
    for child in children {
        if child.kind() == "test_operator" {
            out.push(String::from_utf8_lossy(&source[child.byte_range()]).into_owned());
        }
        let mut inner = child.walk();
        collect_operators(child, &mut inner, source, out);
    }
}
