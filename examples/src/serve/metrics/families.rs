//! The metric families `/metrics` declares, read from what `vllm-rs serve` 0.33.0
//! exposes (`vllm_rs_families.txt`, captured by
//! `examples/scripts/control_conformance.py --write-metric-families`, idle and then
//! after one request): names, types, help texts, histogram buckets and the label sets
//! an idle server already shows. So the names, help and buckets are vllm-rs's own, not
//! retyped, and a Grafana dashboard built for vLLM finds the same series.

/// The exposition the families come from.
pub const VLLM_RS_EXPOSITION: &str = include_str!("vllm_rs_families.txt");

/// The model name in the captured label sets.
pub const MODEL_PLACEHOLDER: &str = "MODEL";

/// A label set: `(name, value)` pairs in order.
pub type LabelSet = Vec<(String, String)>;

/// A metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A counter (exposed as `NAME_total`).
    Counter,
    /// A gauge.
    Gauge,
    /// A histogram.
    Histogram,
}

/// One metric family.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilySpec {
    /// The family name (`vllm:prompt_tokens`).
    pub name: String,
    /// Its type.
    pub kind: Kind,
    /// The help text as registered (the exposition adds a final `.`).
    pub help: String,
    /// Upper bounds of the histogram buckets (without `+Inf`).
    pub buckets: Vec<f64>,
    /// Whether the values are floats (`0.0`) rather than integers.
    pub float: bool,
    /// The label sets an idle server shows, in order (without `le`).
    pub label_sets: Vec<LabelSet>,
}

/// The line that starts the exposition taken after a request.
const AFTER_A_REQUEST: &str = "# ==== after a request";

/// Parses the captured expositions into their families: the first (idle) gives the
/// families and their initial label sets, the second adds the histogram buckets.
pub fn parse(text: &str) -> Result<Vec<FamilySpec>, String> {
    let (idle, busy) = text
        .split_once(AFTER_A_REQUEST)
        .ok_or("the capture has no exposition after a request")?;
    let mut families = parse_exposition(idle)?;
    for busy in parse_exposition(busy)? {
        if let Some(family) = families.iter_mut().find(|f| f.name == busy.name) {
            for bound in busy.buckets {
                if !family.buckets.contains(&bound) {
                    family.buckets.push(bound);
                }
            }
            family.buckets.sort_by(f64::total_cmp);
            family.float |= busy.float && family.kind != Kind::Histogram;
        }
    }
    Ok(families)
}

/// Parses one OpenMetrics exposition.
fn parse_exposition(text: &str) -> Result<Vec<FamilySpec>, String> {
    let mut families: Vec<FamilySpec> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            families.push(FamilySpec {
                name: name.to_owned(),
                kind: Kind::Gauge,
                help: help.strip_suffix('.').unwrap_or(help).to_owned(),
                buckets: Vec::new(),
                float: false,
                label_sets: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let family = families.last_mut().ok_or("TYPE before HELP")?;
            family.kind = match rest.rsplit(' ').next() {
                Some("counter") => Kind::Counter,
                Some("gauge") => Kind::Gauge,
                Some("histogram") => Kind::Histogram,
                other => return Err(format!("unknown metric type {other:?}")),
            };
        } else if !line.starts_with('#') && !line.is_empty() {
            let family = families.last_mut().ok_or("a sample before any family")?;
            let (labels, value) = sample(line)?;
            family.float |= value.contains(['.', 'e']);
            let mut kept = Vec::new();
            for (key, value) in labels {
                if key == "le" {
                    if value != "+Inf" {
                        let bound: f64 =
                            value.parse().map_err(|_| format!("bad bucket {value}"))?;
                        if !family.buckets.contains(&bound) {
                            family.buckets.push(bound);
                        }
                    }
                } else {
                    kept.push((key, value));
                }
            }
            if !family.label_sets.contains(&kept) {
                family.label_sets.push(kept);
            }
        }
    }
    Ok(families)
}

/// A sample line's labels and value.
fn sample(line: &str) -> Result<(LabelSet, &str), String> {
    let (head, value) = line.rsplit_once(' ').ok_or("a sample without a value")?;
    let Some(start) = head.find('{') else {
        return Ok((Vec::new(), value));
    };
    let body = head[start + 1..]
        .strip_suffix('}')
        .ok_or("unclosed labels")?;
    let mut labels = Vec::new();
    for pair in body.split("\",").filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once("=\"").ok_or("a label without a value")?;
        labels.push((key.to_owned(), value.trim_end_matches('"').to_owned()));
    }
    Ok((labels, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_families_parse() {
        let families = parse(VLLM_RS_EXPOSITION).unwrap();
        let ttft = families
            .iter()
            .find(|f| f.name == "vllm:time_to_first_token_seconds")
            .unwrap();
        assert_eq!(ttft.kind, Kind::Histogram);
        assert_eq!(ttft.buckets.first(), Some(&0.001));
        assert!(
            ttft.label_sets.is_empty(),
            "per-request series appear with requests"
        );
        let prompt = families
            .iter()
            .find(|f| f.name == "vllm:request_prompt_tokens")
            .unwrap();
        assert_eq!(prompt.buckets.len(), 14);
        let running = families
            .iter()
            .find(|f| f.name == "vllm:num_requests_running")
            .unwrap();
        assert_eq!(running.kind, Kind::Gauge);
        assert!(!running.float);
        assert_eq!(
            running.label_sets,
            vec![vec![
                ("model_name".to_owned(), MODEL_PLACEHOLDER.to_owned()),
                ("engine".to_owned(), "0".to_owned())
            ]]
        );
        let usage = families
            .iter()
            .find(|f| f.name == "vllm:kv_cache_usage_perc")
            .unwrap();
        assert!(usage.float);
    }
}
