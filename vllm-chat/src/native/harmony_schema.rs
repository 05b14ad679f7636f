//! Harmony's rendering of a tool's JSON schema as a TypeScript type
//! (`HarmonyEncoding::json_schema_to_typescript` of `openai-harmony`, Apache-2.0,
//! ported rule for rule; the parity corpus checks it against the Python build vLLM
//! uses).

use serde_json::Value;

fn is_enum(schema: &Value) -> bool {
    schema
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|arr| !arr.is_empty())
}

fn is_nullable(schema: &Value) -> bool {
    schema
        .get("nullable")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// `default: …` as Harmony writes it: a string in quotes unless the schema is an
/// enum, other values as compact JSON.
fn default_comment(schema: &Value, default: &Value) -> String {
    match default.as_str() {
        Some(s) if !is_enum(schema) => format!("default: \"{s}\""),
        Some(s) => format!("default: {s}"),
        None => format!("default: {default}"),
    }
}

fn with_null(type_str: String, variant: &Value) -> String {
    if is_nullable(variant) && !type_str.contains("null") {
        format!("{type_str} | null")
    } else {
        type_str
    }
}

/// The TypeScript type of `schema`, its continuation lines indented by `indent`.
pub(crate) fn to_typescript(schema: &Value, indent: &str) -> String {
    if let Some(arr) = schema.get("oneOf").and_then(Value::as_array) {
        let mut out = String::new();
        for (i, variant) in arr.iter().enumerate() {
            if i > 0 {
                out.push('\n');
                out.push_str(&format!("{indent} | "));
            } else {
                out.push_str(&format!("\n{indent} | "));
            }
            let type_str = with_null(to_typescript(variant, &format!("{indent}   ")), variant);
            out.push_str(&type_str);
            let mut trailing = Vec::new();
            if let Some(desc) = variant.get("description").and_then(Value::as_str) {
                trailing.push(desc.to_owned());
            }
            if let Some(default) = variant.get("default") {
                trailing.push(default_comment(variant, default));
            }
            if !trailing.is_empty() {
                out.push_str(&format!(" // {}", trailing.join(" ")));
            }
        }
        return out;
    }
    if let Some(types) = schema.get("type").and_then(Value::as_array) {
        let names: Vec<&str> = types
            .iter()
            .filter_map(Value::as_str)
            .map(|t| if t == "integer" { "number" } else { t })
            .collect();
        if !names.is_empty() {
            return names.join(" | ");
        }
    }
    let Some(ty) = schema.get("type").and_then(Value::as_str) else {
        return "any".to_owned();
    };
    match ty {
        "object" => object(schema, indent),
        "string" => {
            if let Some(arr) = schema.get("enum").and_then(Value::as_array) {
                let values: Vec<String> = arr
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| format!("\"{s}\""))
                    .collect();
                if !values.is_empty() {
                    return values.join(" | ");
                }
            }
            "string".to_owned()
        }
        "number" | "integer" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "array" => match schema.get("items") {
            Some(items) => format!("{}[]", to_typescript(items, indent)),
            None => "Array<any>".to_owned(),
        },
        _ => "any".to_owned(),
    }
}

fn object(schema: &Value, indent: &str) -> String {
    let mut out = String::new();
    if let Some(desc) = schema.get("description").and_then(Value::as_str) {
        out.push_str(&format!("{indent}// {desc}\n"));
    }
    out.push_str("{\n");
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let optional = |key: &str| if required.contains(&key) { "" } else { "?" };
        for (key, val) in props {
            if let Some(title) = val.get("title").and_then(Value::as_str) {
                out.push_str(&format!("{indent}// {title}\n{indent}//\n"));
            }
            if val.get("oneOf").is_none()
                && let Some(desc) = val.get("description").and_then(Value::as_str)
            {
                out.push_str(&format!("{indent}// {desc}\n"));
            }
            if let Some(examples) = val.get("examples").and_then(Value::as_array)
                && !examples.is_empty()
            {
                out.push_str(&format!("{indent}// Examples:\n"));
                for example in examples.iter().filter_map(Value::as_str) {
                    out.push_str(&format!("{indent}// - \"{example}\"\n"));
                }
            }
            if let Some(arr) = val.get("oneOf").and_then(Value::as_array) {
                let property_desc = val.get("description").and_then(Value::as_str);
                let skip_property_desc = property_desc.is_some()
                    && arr
                        .first()
                        .and_then(|v| v.get("description"))
                        .and_then(Value::as_str)
                        == property_desc;
                let mut desc_above = false;
                if !skip_property_desc && let Some(desc) = property_desc {
                    out.push_str(&format!("{indent}// {desc}\n"));
                    desc_above = true;
                }
                if let Some(default) = val.get("default") {
                    out.push_str(&format!("{indent}// {}\n", default_comment(val, default)));
                }
                out.push_str(&format!("{indent}{key}{}:\n", optional(key)));
                for (i, variant) in arr.iter().enumerate() {
                    out.push_str(&format!("{indent} | "));
                    let type_str =
                        with_null(to_typescript(variant, &format!("{indent}   ")), variant);
                    out.push_str(&type_str);
                    let mut trailing = Vec::new();
                    if !(i == 0 && desc_above)
                        && let Some(desc) = variant.get("description").and_then(Value::as_str)
                        && Some(desc) != property_desc
                    {
                        trailing.push(desc.to_owned());
                    }
                    if let Some(default) = variant.get("default") {
                        trailing.push(default_comment(variant, default));
                    }
                    if !trailing.is_empty() {
                        out.push_str(&format!(" // {}", trailing.join(" ")));
                    }
                    out.push('\n');
                }
                out.push_str(&format!("{indent},\n"));
                continue;
            }
            out.push_str(&format!("{indent}{key}{}: ", optional(key)));
            let type_str = with_null(to_typescript(val, &format!("{indent}    ")), val);
            out.push_str(&type_str);
            out.push(',');
            if val.get("oneOf").is_none()
                && let Some(default) = val.get("default")
            {
                out.push_str(&format!(" // {}", default_comment(val, default)));
            }
            out.push('\n');
        }
    }
    out.push_str(&format!("{indent}}}"));
    out
}
