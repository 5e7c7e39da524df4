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

/// The environment variable that carries template variable `var` into a
/// shell command: `BATON_VAR_` and the name upper-cased, every character
/// that is not an ASCII letter or digit turned into `_`
/// (`labels.task-id` → `BATON_VAR_LABELS_TASK_ID`).
pub fn env_name(var: &str) -> String {
    let mut out = String::with_capacity(10 + var.len());
    out.push_str("BATON_VAR_");
    for c in var.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push('_');
        }
    }
    out
}

/// Renders a template for `sh -c` without putting any value into the
/// command text: each variable becomes a reference to an environment
/// variable (`{{task}}` → `${BATON_VAR_TASK}`), so a value such as
/// `$(rm -rf ~)` is never parsed by the shell. Returns the command and the
/// (template variable, environment variable) pairs the caller must set in
/// the process's environment. Two variables whose names map to the same
/// environment name get distinct ones (`_2`, `_3`, …).
pub fn render_for_shell(template: &str) -> (String, Vec<(String, String)>) {
    let Ok(segments) = parse(template) else {
        return (template.to_string(), Vec::new());
    };
    let mut out = String::with_capacity(template.len());
    let mut vars: Vec<(String, String)> = Vec::new();
    for s in segments {
        match s {
            Segment::Text(t) => out.push_str(t),
            Segment::Var(v) => {
                let env = match vars.iter().find(|(var, _)| var == v) {
                    Some((_, env)) => env.clone(),
                    None => {
                        let base = env_name(v);
                        let mut env = base.clone();
                        let mut n = 2;
                        while vars.iter().any(|(_, e)| *e == env) {
                            env = format!("{base}_{n}");
                            n += 1;
                        }
                        vars.push((v.to_string(), env.clone()));
                        env
                    }
                };
                out.push_str("${");
                out.push_str(&env);
                out.push('}');
            }
        }
    }
    (out, vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_rendering_refers_to_environment_variables() {
        let (cmd, vars) = render_for_shell(
            "echo \"{{task}}\" {{ flags.x }} {{labels.task-id}} {{task}} {{labels.task_id}}",
        );
        assert_eq!(
            cmd,
            "echo \"${BATON_VAR_TASK}\" ${BATON_VAR_FLAGS_X} ${BATON_VAR_LABELS_TASK_ID} ${BATON_VAR_TASK} ${BATON_VAR_LABELS_TASK_ID_2}"
        );
        assert_eq!(
            vars,
            vec![
                ("task".to_string(), "BATON_VAR_TASK".to_string()),
                ("flags.x".to_string(), "BATON_VAR_FLAGS_X".to_string()),
                (
                    "labels.task-id".to_string(),
                    "BATON_VAR_LABELS_TASK_ID".to_string()
                ),
                (
                    "labels.task_id".to_string(),
                    "BATON_VAR_LABELS_TASK_ID_2".to_string()
                ),
            ]
        );
        assert_eq!(env_name("brief"), "BATON_VAR_BRIEF");
        assert_eq!(env_name("labels.ü-x"), "BATON_VAR_LABELS___X");
    }

    #[test]
    fn shell_rendering_keeps_text_without_variables() {
        assert_eq!(
            render_for_shell("echo 'hi $(x)'"),
            ("echo 'hi $(x)'".to_string(), Vec::new())
        );
        // Never valid at run time (refused at load), but never panics either.
        assert_eq!(render_for_shell("a {{b").0, "a {{b");
    }

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
