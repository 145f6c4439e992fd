//! Where tree-sitter and bash may read a line differently, and the
//! places bash evaluates values later: checks the walker makes on the way.

use tree_sitter::Node;

use super::{Arithmetic, Item, Problem, Reading, Walker, arith, short};

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
        self.evaluated(node);
        if node.kind() == "for_statement"
            && let Some(variable) = node.child_by_field_name("variable")
        {
            // `for i in 1 2 3`, `for i in {1..5}`: numbers the line spells out.
            let mut cursor = node.walk();
            let values: Vec<Node<'_>> = node.children_by_field_name("value", &mut cursor).collect();
            let numbers = !values.is_empty()
                && values.iter().all(|value| {
                    value.kind() == "number"
                        || (value.kind() == "brace_expression"
                            && self
                                .text(*value)
                                .chars()
                                .all(|c| c.is_ascii_digit() || matches!(c, '{' | '}' | '.' | '-')))
                });
            let name = self.text(variable).to_owned();
            self.items.push(if numbers {
                Item::Counts(name)
            } else {
                Item::Sets(name)
            });
        }
        if node.kind() == "heredoc_body" {
            self.heredoc_gaps(node)?;
        }
        if node.kind() == "command_substitution"
            && let Some(inner) = text.strip_prefix("$((").and_then(|t| t.strip_suffix("))"))
        {
            // `$((...))` is arithmetic to bash (an invalid one fails, it is
            // never run as commands) where tree-sitter may read a subshell
            // (in a here-document, an operator's word).
            self.arithmetic(text, Some(inner));
            return Ok(());
        }
        self.children(node, depth)
    }
    /// A word or string part whose text holds an unescaped backtick, `$(`,
    /// `$[` or `${`: an expansion the walk did not see.
    pub(super) fn leaf(&self, node: Node<'_>) -> Result<(), Problem> {
        let text = self.text(node);
        if hides_expansion(text) {
            return Err(Problem(format!(
                "a substitution the checker cannot place (`{}`)",
                short(text)
            )));
        }
        Ok(())
    }

    /// An unquoted here-document's text outside the expansions tree-sitter
    /// found in it: one it missed (after leading blanks, say) would still
    /// run, so text there that bash would expand is not understood.
    fn heredoc_gaps(&self, body: Node<'_>) -> Result<(), Problem> {
        let quoted = body.parent().is_some_and(|redirect| {
            let mut cursor = redirect.walk();
            redirect
                .children(&mut cursor)
                .filter(|child| child.kind() == "heredoc_start")
                .any(|start| self.text(start).contains(['\'', '"', '\\']))
        });
        if quoted {
            return Ok(());
        }
        let mut at = body.start_byte();
        let mut cursor = body.walk();
        let mut gaps = Vec::new();
        for child in body.named_children(&mut cursor) {
            if child.kind() != "heredoc_content" {
                gaps.push(at..child.start_byte());
                at = child.end_byte();
            }
        }
        gaps.push(at..body.end_byte());
        for gap in gaps {
            let text = std::str::from_utf8(&self.source[gap]).unwrap_or("$(");
            if hides_expansion(text) {
                return Err(Problem(format!(
                    "an expansion in a here-document the checker cannot place (`{}`)",
                    short(text.trim())
                )));
            }
        }
        Ok(())
    }

    /// A pattern (`${x#PATTERN}`, `=~`), which tree-sitter leaves unparsed:
    /// a substitution inside it cannot be checked.
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
    /// Notes where `node` makes bash evaluate arithmetic, or a value as
    /// code.
    pub(super) fn evaluated(&mut self, node: Node<'_>) {
        let text = self.text(node);
        match node.kind() {
            "arithmetic_expansion" => {
                let inner = text
                    .strip_prefix("$((")
                    .and_then(|t| t.strip_suffix("))"))
                    .or_else(|| text.strip_prefix("$[").and_then(|t| t.strip_suffix(']')));
                self.arithmetic(text, inner);
            }
            "compound_statement" if text.starts_with("((") => {
                let inner = text.strip_prefix("((").and_then(|t| t.strip_suffix("))"));
                self.arithmetic(text, inner);
            }
            "c_style_for_statement" => {
                let inner = text.find("((").and_then(|at| {
                    text[at + 2..]
                        .find("))")
                        .map(|end| &text[at + 2..at + 2 + end])
                });
                self.arithmetic(text, inner);
            }
            "test_command" => self.test_operands(node),
            "expansion" => {
                let found = arith::parameter(text);
                if let Some(why) = found.late {
                    self.items.push(Item::Late {
                        construct: short(text),
                        why: format!("bash evaluates {why}"),
                    });
                }
                if let Some(reading) = found.arithmetic {
                    self.items.push(Item::Arithmetic(Arithmetic {
                        construct: short(text),
                        reading,
                    }));
                }
                if let Some(name) = found.assigns {
                    self.items.push(Item::Sets(name));
                }
            }
            "subscript" if node.parent().is_none_or(|p| p.kind() != "expansion") => {
                if let Some(index) = node.child_by_field_name("index") {
                    let index = self.text(index);
                    if !matches!(index, "@" | "*") {
                        self.items.push(Item::Arithmetic(Arithmetic {
                            construct: short(text),
                            reading: arith::subscript_reading(index),
                        }));
                    }
                }
            }
            // `([k]=v ...)`: each `[k]` is a subscript.
            "array" => {
                for subscript in array_subscripts(text) {
                    self.items.push(Item::Arithmetic(Arithmetic {
                        construct: short(text),
                        reading: arith::subscript_reading(&subscript),
                    }));
                }
            }
            _ => {}
        }
    }

    /// Arithmetic whose expression is `inner` (unreadable when `None`).
    fn arithmetic(&mut self, text: &str, inner: Option<&str>) {
        let reading = inner.map_or_else(
            || Reading {
                code: Some("a form the checker cannot read".to_owned()),
                ..Reading::default()
            },
            arith::expression,
        );
        self.items.push(Item::Arithmetic(Arithmetic {
            construct: short(text),
            reading,
        }));
    }

    /// `[[ A -eq B ]]` and its kin evaluate both operands as arithmetic;
    /// `[[ -v NAME ]]` the subscript of `NAME`.
    fn test_operands(&mut self, node: Node<'_>) {
        let mut stack = vec![node];
        while let Some(current) = stack.pop() {
            let mut cursor = current.walk();
            let children: Vec<Node<'_>> = current.children(&mut cursor).collect();
            let operator = children
                .iter()
                .find(|child| child.kind() == "test_operator")
                .map(|child| self.text(*child));
            let operands: Vec<Node<'_>> = children
                .iter()
                .filter(|child| child.is_named() && child.kind() != "test_operator")
                .copied()
                .collect();
            match operator {
                Some("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") => {
                    for operand in &operands {
                        self.items.push(Item::Arithmetic(Arithmetic {
                            construct: short(self.text(current)),
                            reading: arith::comparison_operand(self.text(*operand)),
                        }));
                    }
                }
                Some("-v") => {
                    for operand in &operands {
                        let name = self.text(*operand);
                        match arith::name_operand(name) {
                            _ if name.contains(['$', '`', '"', '\\', '\'']) => {
                                self.items.push(Item::Late {
                                    construct: short(self.text(current)),
                                    why: format!(
                                        "`-v {name}` takes a value as a name, which may hold code"
                                    ),
                                });
                            }
                            Some(reading) => self.items.push(Item::Arithmetic(Arithmetic {
                                construct: short(self.text(current)),
                                reading,
                            })),
                            None => {}
                        }
                    }
                }
                _ => {}
            }
            stack.extend(operands);
        }
    }
}

/// Whether `text` holds an unescaped backtick, `$(`, `$[` or `${`: text
/// bash would expand.
fn hides_expansion(text: &str) -> bool {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '`' => return true,
            '$' if matches!(chars.peek(), Some('(' | '[' | '{')) => return true,
            _ => {}
        }
    }
    false
}

/// The subscripts of a compound assignment `([k]=v ...)`, as bash reads
/// them: a `[` that starts an element, unquoted, to its matching `]`
/// (spaces inside included); an unclosed one is kept whole.
fn array_subscripts(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    let mut start_of_element = false;
    let mut quote: Option<char> = None;
    while at < chars.len() {
        let c = chars[at];
        if let Some(open) = quote {
            if c == '\\' && open == '"' {
                at += 1;
            } else if c == open {
                quote = None;
            }
            at += 1;
            continue;
        }
        if c == '[' && start_of_element {
            let mut depth = 0usize;
            let mut end = at;
            while end < chars.len() {
                match chars[end] {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                end += 1;
            }
            found.push(chars[at + 1..end.min(chars.len())].iter().collect());
            at = end + 1;
            start_of_element = false;
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '\\' => at += 1,
            _ => {}
        }
        start_of_element = c == '(' || c.is_whitespace();
        at += 1;
    }
    found
}
