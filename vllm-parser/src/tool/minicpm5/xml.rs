//! The part of XML that `xml.etree.ElementTree.fromstring` (expat) accepts in
//! a MiniCPM5 call block, read into the little tree vLLM looks at.
//!
//! Well-formedness is checked the way expat checks it: one root element,
//! matching end tags, quoted and unique attributes, only the five predefined
//! entities and valid character references, no `<` or `]]>` in text, no
//! `--` in comments, only XML characters; line ends are normalised to `\n`
//! and whitespace in attribute values to spaces. Comments and processing
//! instructions are skipped, CDATA sections are text. Namespaces are not
//! supported: a prefixed name or an `xmlns` attribute is refused, like an
//! unbound prefix in expat (a declared one, which expat accepts, is a gap).

/// An element, with what `ElementTree` gives of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    /// The tag.
    pub name: String,
    /// The attributes, in order.
    pub attributes: Vec<(String, String)>,
    /// `.text`: the text before the first child element.
    pub text: String,
    /// The child elements.
    pub children: Vec<Element>,
}

impl Element {
    /// `.attrib.get(name)`.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `.findall(name)`: the direct children with that tag.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Nesting deeper than this is refused (expat has no such limit; no call
/// block comes near it).
const MAX_DEPTH: usize = 512;

/// The root element of `document`, or `None` where `fromstring` raises.
pub fn parse(document: &str) -> Option<Element> {
    let text = document.replace("\r\n", "\n").replace('\r', "\n");
    if !text.chars().all(is_xml_char) {
        return None;
    }
    let mut reader = Reader {
        text: &text,
        pos: 0,
    };
    reader.misc()?;
    let root = reader.element()?;
    reader.misc()?;
    (reader.pos == text.len()).then_some(root)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn eat(&mut self, s: &str) -> bool {
        let found = self.rest().starts_with(s);
        if found {
            self.pos += s.len();
        }
        found
    }

    /// Skips whitespace; whether there was some.
    fn space(&mut self) -> bool {
        let rest = self.rest();
        let len = rest.len() - rest.trim_start_matches([' ', '\t', '\n']).len();
        self.pos += len;
        len > 0
    }

    /// Whitespace, comments and processing instructions around the root.
    fn misc(&mut self) -> Option<()> {
        loop {
            self.space();
            if self.rest().starts_with("<!--") {
                self.comment()?;
            } else if self.rest().starts_with("<?") {
                self.instruction()?;
            } else {
                return Some(());
            }
        }
    }

    fn comment(&mut self) -> Option<()> {
        self.pos += "<!--".len();
        let end = self.rest().find("--")?;
        self.pos += end;
        self.eat("-->").then_some(())
    }

    fn instruction(&mut self) -> Option<()> {
        self.pos += "<?".len();
        let target = self.name()?;
        if target.eq_ignore_ascii_case("xml") {
            return None;
        }
        let end = self.rest().find("?>")?;
        if end > 0 && !self.rest().starts_with([' ', '\t', '\n']) {
            return None;
        }
        self.pos += end + "?>".len();
        Some(())
    }

    fn name(&mut self) -> Option<String> {
        let rest = self.rest();
        let mut chars = rest.char_indices();
        let (_, first) = chars.next()?;
        if !is_name_start(first) {
            return None;
        }
        let len = chars
            .find(|&(_, c)| !is_name_char(c))
            .map_or(rest.len(), |(i, _)| i);
        let name = rest[..len].to_owned();
        self.pos += len;
        // Namespaces are not supported (see the module doc).
        (!name.contains(':')).then_some(name)
    }

    /// An element from its `<`, iteratively (no recursion on nesting).
    fn element(&mut self) -> Option<Element> {
        let mut open: Vec<Element> = Vec::new();
        loop {
            // At a start tag.
            if !self.eat("<") {
                return None;
            }
            let element = self.start_tag()?;
            let mut closed = if self.eat("/>") {
                Some(element)
            } else if self.eat(">") && open.len() < MAX_DEPTH {
                open.push(element);
                None
            } else {
                return None;
            };
            loop {
                if let Some(element) = closed.take() {
                    match open.last_mut() {
                        Some(parent) => parent.children.push(element),
                        None => return Some(element),
                    }
                }
                match self.content(open.last_mut()?)? {
                    Step::Child => break,
                    Step::End => closed = Some(open.pop()?),
                }
            }
        }
    }

    /// The start tag after `<`: name and attributes (not the closing `>`).
    fn start_tag(&mut self) -> Option<Element> {
        let name = self.name()?;
        let mut attributes: Vec<(String, String)> = Vec::new();
        loop {
            let spaced = self.space();
            if self.rest().starts_with('>') || self.rest().starts_with("/>") {
                break;
            }
            if !spaced {
                return None;
            }
            let key = self.name()?;
            if key == "xmlns" || attributes.iter().any(|(k, _)| *k == key) {
                return None;
            }
            self.space();
            if !self.eat("=") {
                return None;
            }
            self.space();
            let value = self.attribute_value()?;
            attributes.push((key, value));
        }
        Some(Element {
            name,
            attributes,
            ..Element::default()
        })
    }

    fn attribute_value(&mut self) -> Option<String> {
        let quote = self
            .rest()
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\''))?;
        self.pos += 1;
        let mut value = String::new();
        loop {
            let rest = self.rest();
            let stop = rest.find([quote, '<', '&'])?;
            value.extend(
                rest[..stop]
                    .chars()
                    .map(|c| if matches!(c, '\t' | '\n') { ' ' } else { c }),
            );
            self.pos += stop;
            match self.rest().chars().next()? {
                '&' => value.push_str(&self.reference()?),
                '<' => return None,
                _ => {
                    self.pos += 1;
                    return Some(value);
                }
            }
        }
    }

    /// `&…;` at the cursor, expanded.
    fn reference(&mut self) -> Option<String> {
        self.pos += 1;
        let end = self.rest().find(';')?;
        let body = &self.rest()[..end];
        let expanded = match body {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "apos" => '\'',
            "quot" => '"',
            _ => {
                let number = body.strip_prefix('#')?;
                let code = match number.strip_prefix('x') {
                    Some(hex) if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
                        u32::from_str_radix(hex, 16).ok()?
                    }
                    None if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()) => {
                        number.parse().ok()?
                    }
                    _ => return None,
                };
                char::from_u32(code).filter(|&c| is_xml_char(c))?
            }
        };
        self.pos += end + 1;
        Some(expanded.to_string())
    }

    /// Content of `current` up to its next child's start tag or its end tag.
    fn content(&mut self, current: &mut Element) -> Option<Step> {
        // `.text` is the text before the first child.
        let first_text = current.children.is_empty();
        loop {
            let rest = self.rest();
            let stop = rest.find(['<', '&'])?;
            let data = &rest[..stop];
            if data.contains("]]>") {
                return None;
            }
            if first_text {
                current.text.push_str(data);
            }
            self.pos += stop;
            if self.rest().starts_with('&') {
                let expanded = self.reference()?;
                if first_text {
                    current.text.push_str(&expanded);
                }
            } else if self.rest().starts_with("<!--") {
                self.comment()?;
            } else if self.eat("<![CDATA[") {
                let end = self.rest().find("]]>")?;
                if first_text {
                    current.text.push_str(&self.rest()[..end]);
                }
                self.pos += end + "]]>".len();
            } else if self.rest().starts_with("<?") {
                self.instruction()?;
            } else if self.eat("</") {
                let name = self.name()?;
                self.space();
                return (name == current.name && self.eat(">")).then_some(Step::End);
            } else {
                return Some(Step::Child);
            }
        }
    }
}

/// Where an element's content stopped.
enum Step {
    /// At a child element's `<`.
    Child,
    /// After the element's end tag.
    End,
}

/// XML's `Char`.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// XML's `NameStartChar`.
fn is_name_start(c: char) -> bool {
    matches!(c,
        ':' | 'A'..='Z' | '_' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}'
        | '\u{F8}'..='\u{2FF}' | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}'
        | '\u{200C}'..='\u{200D}' | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}'
        | '\u{3001}'..='\u{D7FF}' | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}'
        | '\u{10000}'..='\u{EFFFF}')
}

/// XML's `NameChar`.
fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(doc: &str) -> Option<String> {
        let root = parse(doc)?;
        Some(root.children.first()?.text.clone())
    }

    #[test]
    fn accepts_and_refuses_like_expat() {
        let param =
            |body: &str| format!(r#"<function name="f"><param name="a">{body}</param></function>"#);
        assert_eq!(text_of(&param("<![CDATA[x<y]]>")).as_deref(), Some("x<y"));
        assert_eq!(
            text_of(&param("a &lt; b<b/>tail")).as_deref(),
            Some("a < b")
        );
        assert_eq!(
            text_of(&param("x<!--c-->y<?p q?>z")).as_deref(),
            Some("xyz")
        );
        assert_eq!(
            text_of(&param("a\r\nb\rc&#x41;&#66;")).as_deref(),
            Some("a\nb\ncAB")
        );
        for bad in ["1 < 2", "a]]>b", "&nbsp;", "&#0;", "\u{1}", "<a:b/>", "<b>"] {
            assert_eq!(parse(&param(bad)), None, "{bad:?}");
        }
        assert_eq!(parse(r#"<function name="f" name="g"></function>"#), None);
        assert_eq!(parse("<function name=f></function>"), None);
        let root = parse("<function  name = \"f\n\tg\" ></function >").unwrap();
        assert_eq!(root.attribute("name"), Some("f  g"));
        assert_eq!(parse(r#"<function name="f"/></function>"#), None);
    }
}
