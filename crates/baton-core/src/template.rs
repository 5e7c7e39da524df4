//! `{{variable}}` templates used in prompts, commands and wait matches.

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Var(&'a str),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unclosed '{{{{' in template")]
    Unclosed,
    #[error("empty '{{{{}}}}' in template")]
    Empty,
}

/// Splits a template into text and variable names (trimmed).
pub fn parse(template: &str) -> Result<Vec<Segment<'_>>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        if start > 0 {
            out.push(Segment::Text(&rest[..start]));
        }
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or(TemplateError::Unclosed)?;
        let name = after[..end].trim();
        if name.is_empty() {
            return Err(TemplateError::Empty);
        }
        out.push(Segment::Var(name));
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest));
    }
    Ok(out)
}

/// The variables a template uses, in order of appearance.
pub fn variables(template: &str) -> Result<Vec<&str>, TemplateError> {
    Ok(parse(template)?
        .into_iter()
        .filter_map(|s| match s {
            Segment::Var(v) => Some(v),
            Segment::Text(_) => None,
        })
        .collect())
}

/// Renders a template; `lookup` returns the value of a variable. Unknown
/// variables were refused at load time, so a `None` renders as empty text.
pub fn render(template: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    match parse(template) {
        Ok(segments) => {
            let mut out = String::with_capacity(template.len());
            for s in segments {
                match s {
                    Segment::Text(t) => out.push_str(t),
                    Segment::Var(v) => out.push_str(&lookup(v).unwrap_or_default()),
                }
            }
            out
        }
        Err(_) => template.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_variables() {
        let out = render("Fix {{ task }} in {{phase}}.", |v| match v {
            "task" => Some("bug".into()),
            "phase" => Some("execute".into()),
            _ => None,
        });
        assert_eq!(out, "Fix bug in execute.");
    }

    #[test]
    fn reports_unclosed() {
        assert_eq!(parse("a {{task"), Err(TemplateError::Unclosed));
        assert_eq!(variables("{{a}}{{b.c}}").unwrap(), vec!["a", "b.c"]);
    }
}
