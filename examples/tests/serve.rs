//! End-to-end HTTP tests of `serve` with the embedded mock engine: every endpoint,
//! streamed and whole, stop strings, logprobs, tools, reasoning and errors.

mod common;

use common::*;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use vllm_examples::serve::ServeConfig;
use vllm_examples::serve::engine::{EngineSource, MockSettings};

/// Token ids of `text` as the server tokenizes it.
async fn tokenize(addr: std::net::SocketAddr, text: &str) -> Vec<u64> {
    let (status, body) = post(
        addr,
        "/tokenize",
        json!({"prompt": text, "add_special_tokens": false}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect()
}

fn hi() -> Value {
    json!([{"role": "user", "content": "Hi"}])
}

#[test]
fn health_and_models() {
    run(async {
        let addr = plain();
        assert_eq!(get(addr, "/health").await.status, StatusCode::OK);
        let models = get(addr, "/v1/models").await.json().await;
        let config: Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../testdata/models/qwen3/config.json"
            ))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(models["object"], "list");
        assert_eq!(models["data"][0]["id"], "qwen3");
        assert_eq!(models["data"][0]["owned_by"], "vllm");
        assert_eq!(
            models["data"][0]["max_model_len"],
            config["max_position_embeddings"]
        );
    });
}

#[test]
fn chat_whole_answer_has_the_engine_text_and_usage() {
    run(async {
        let addr = plain();
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"model": "qwen3", "messages": hi()}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["object"], "chat.completion");
        let choice = &body["choices"][0];
        assert_eq!(choice["message"]["role"], "assistant");
        assert_eq!(choice["message"]["content"], PLAIN_TEXT);
        assert_eq!(choice["message"]["reasoning"], Value::Null);
        assert!(choice["message"].get("tool_calls").is_none());
        assert_eq!(choice["finish_reason"], "stop");
        assert_eq!(choice["stop_reason"], Value::Null, "EOS has no stop_reason");
        // The prompt is the rendered chat; the output is the text plus EOS.
        let (_, rendered) = post(addr, "/tokenize", json!({"messages": hi()})).await;
        assert_eq!(body["usage"]["prompt_tokens"], rendered["count"]);
        let output = tokenize(addr, PLAIN_TEXT).await.len() as u64 + 1;
        assert_eq!(body["usage"]["completion_tokens"], output);
        assert_eq!(
            body["usage"]["total_tokens"].as_u64().unwrap(),
            rendered["count"].as_u64().unwrap() + output
        );
    });
}

#[test]
fn chat_stream_carries_the_same_answer_in_deltas() {
    run(async {
        let addr = plain();
        let events = stream_all(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "stream": true, "stream_options": {"include_usage": true}}),
        )
        .await;
        assert_eq!(
            events[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        assert!(
            events
                .iter()
                .all(|e| e["object"] == "chat.completion.chunk")
        );
        assert!(events.iter().all(|e| e["id"] == events[0]["id"]));
        assert_eq!(concat_delta(&events, "content"), PLAIN_TEXT);
        assert_eq!(final_choice(&events)["finish_reason"], "stop");
        // vLLM sets `weight_versions` (null) on the final choice only.
        assert_eq!(final_choice(&events)["weight_versions"], Value::Null);
        assert!(final_choice(&events).get("weight_versions").is_some());
        // Every earlier choice leaves it out (a fast engine may merge the whole answer
        // into the final chunk, so there may be none).
        assert!(
            events
                .iter()
                .filter_map(|e| e["choices"].get(0))
                .filter(|c| c["finish_reason"].is_null())
                .all(|c| c.get("weight_versions").is_none())
        );
        let usage = events.last().unwrap();
        assert_eq!(usage["choices"], json!([]));
        let output = tokenize(addr, PLAIN_TEXT).await.len() as u64 + 1;
        assert_eq!(usage["usage"]["completion_tokens"], output);
    });
}

#[test]
fn continuous_usage_counts_up_in_every_chunk() {
    run(async {
        let addr = plain();
        let options = json!({"include_usage": true, "continuous_usage_stats": true});
        for path in ["/v1/chat/completions", "/v1/completions"] {
            let body = json!({"messages": hi(), "prompt": "Hi", "max_tokens": 100, "stream": true, "stream_options": options});
            let events = stream_all(addr, path, body).await;
            let counts: Vec<u64> = events
                .iter()
                .map(|e| {
                    e["usage"]["completion_tokens"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("no usage in {e}"))
                })
                .collect();
            assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
            let output = tokenize(addr, PLAIN_TEXT).await.len() as u64 + 1;
            assert_eq!(*counts.last().unwrap(), output, "{path}");
        }
    });
}

#[test]
fn max_tokens_finishes_with_length() {
    run(async {
        let addr = plain();
        let (_, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "max_tokens": 3}),
        )
        .await;
        assert_eq!(body["choices"][0]["finish_reason"], "length");
        assert_eq!(body["usage"]["completion_tokens"], 3);
        let first3 = tokenize(addr, PLAIN_TEXT).await[..3].to_vec();
        let (_, text) = post(addr, "/detokenize", json!({"tokens": first3})).await;
        assert_eq!(body["choices"][0]["message"]["content"], text["prompt"]);
    });
}

#[test]
fn stop_strings_cut_the_text_and_report_the_string() {
    run(async {
        let addr = plain();
        let (_, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "stop": ["mock"]}),
        )
        .await;
        let choice = &body["choices"][0];
        assert_eq!(choice["message"]["content"], "Hello! I am a ");
        assert_eq!(choice["finish_reason"], "stop");
        assert_eq!(choice["stop_reason"], "mock");

        let (_, body) = post(
            addr,
            "/v1/completions",
            json!({"prompt": "Hi", "max_tokens": 50, "stop": "engine", "include_stop_str_in_output": true}),
        )
        .await;
        assert_eq!(body["choices"][0]["text"], "Hello! I am a mock engine");
        assert_eq!(body["choices"][0]["stop_reason"], "engine");

        let events = stream_all(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "stream": true, "stop": ["mock", "!"]}),
        )
        .await;
        assert_eq!(concat_delta(&events, "content"), "Hello");
        let last = final_choice(&events);
        assert_eq!(last["finish_reason"], "stop");
        assert_eq!(last["stop_reason"], "!");
    });
}

#[test]
fn stop_token_ids_finish_with_the_token_as_stop_reason() {
    run(async {
        let addr = plain();
        let answer = tokenize(addr, PLAIN_TEXT).await;
        let stop = answer[1];
        let (_, before) = post(addr, "/detokenize", json!({"tokens": answer[..1]})).await;
        let (_, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "stop_token_ids": [stop]}),
        )
        .await;
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "stop");
        assert_eq!(choice["stop_reason"], stop);
        // The stop token's text is left out, as for EOS.
        assert_eq!(choice["message"]["content"], before["prompt"]);
        assert_eq!(body["usage"]["completion_tokens"], 2);
    });
}

#[test]
fn chat_logprobs_have_tokens_bytes_and_top_logprobs() {
    run(async {
        let addr = plain();
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "logprobs": true, "top_logprobs": 2}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let content = body["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap();
        assert_eq!(
            content.len() as u64,
            body["usage"]["completion_tokens"].as_u64().unwrap()
        );
        let mut text = String::new();
        for entry in content {
            let token = entry["token"].as_str().unwrap();
            text.push_str(token);
            let bytes: Vec<u8> = entry["bytes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8)
                .collect();
            assert_eq!(bytes, token.as_bytes());
            assert!(entry["logprob"].as_f64().unwrap() <= 0.0);
            let top = entry["top_logprobs"].as_array().unwrap();
            assert_eq!(top.len(), 2, "{entry}");
            assert!(
                top.iter()
                    .all(|t| t["token"].is_string() && t["logprob"].as_f64().unwrap() <= 0.0)
            );
        }
        // The sampled tokens spell the answer, then the EOS token.
        assert_eq!(text, format!("{PLAIN_TEXT}<|im_end|>"));

        let events = stream_all(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "stream": true, "logprobs": true, "top_logprobs": 0}),
        )
        .await;
        let streamed: String = events
            .iter()
            .filter_map(|e| {
                e["choices"].get(0)?["logprobs"]["content"]
                    .as_array()
                    .cloned()
            })
            .flatten()
            .map(|entry| {
                assert_eq!(entry["top_logprobs"], json!([]));
                entry["token"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(streamed, text);
    });
}

#[test]
fn chat_echo_and_token_id_logprobs() {
    run(async {
        let addr = plain();
        let messages =
            json!([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Well, "}]);
        let request = json!({"messages": messages, "echo": true, "add_generation_prompt": false, "continue_final_message": true});
        let (status, body) = post(addr, "/v1/chat/completions", request.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            format!("Well, {PLAIN_TEXT}")
        );
        let mut streamed = request;
        streamed["stream"] = json!(true);
        let events = stream_all(addr, "/v1/chat/completions", streamed).await;
        assert_eq!(events[1]["choices"][0]["delta"]["content"], "Well, ");
        assert_eq!(
            concat_delta(&events, "content"),
            format!("Well, {PLAIN_TEXT}")
        );

        let (_, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "max_tokens": 4, "logprobs": true, "top_logprobs": 1, "return_tokens_as_token_ids": true}),
        )
        .await;
        let expected: Vec<String> = tokenize(addr, PLAIN_TEXT).await[..4]
            .iter()
            .map(|t| format!("token_id:{t}"))
            .collect();
        let tokens: Vec<String> = body["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["token"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(tokens, expected);
    });
}

#[test]
fn completion_logprobs_have_consistent_offsets() {
    run(async {
        let addr = plain();
        let (status, body) = post(
            addr,
            "/v1/completions",
            json!({"prompt": "Hi", "max_tokens": 6, "logprobs": 1}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let lp = &body["choices"][0]["logprobs"];
        let tokens: Vec<&str> = lp["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tokens.len(), 6);
        assert_eq!(
            tokens.concat(),
            body["choices"][0]["text"].as_str().unwrap()
        );
        let offsets: Vec<u64> = lp["text_offset"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_u64().unwrap())
            .collect();
        assert_eq!(offsets[0], 0);
        for i in 1..offsets.len() {
            assert_eq!(
                offsets[i],
                offsets[i - 1] + tokens[i - 1].chars().count() as u64
            );
        }
        for (i, top) in lp["top_logprobs"].as_array().unwrap().iter().enumerate() {
            let top = top.as_object().unwrap();
            assert!((1..=2).contains(&top.len()));
            assert!(top.contains_key(tokens[i]), "sampled token first: {top:?}");
        }
    });
}

#[test]
fn completions_whole_stream_and_echo() {
    run(async {
        let addr = plain();
        let (status, body) = post(
            addr,
            "/v1/completions",
            json!({"model": "qwen3", "prompt": "Say hi", "max_tokens": 100}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["object"], "text_completion");
        assert_eq!(body["choices"][0]["text"], PLAIN_TEXT);
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            body["usage"]["prompt_tokens"].as_u64().unwrap(),
            tokenize(addr, "Say hi").await.len() as u64
        );

        let (_, echoed) = post(
            addr,
            "/v1/completions",
            json!({"prompt": "Say hi", "max_tokens": 100, "echo": true}),
        )
        .await;
        assert_eq!(echoed["choices"][0]["text"], format!("Say hi{PLAIN_TEXT}"));

        let events = stream_all(
            addr,
            "/v1/completions",
            json!({"prompt": [1, 2, 3], "max_tokens": 100, "stream": true, "stream_options": {"include_usage": true}}),
        )
        .await;
        let text: String = events
            .iter()
            .filter_map(|e| e["choices"].get(0)?["text"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(text, PLAIN_TEXT);
        assert_eq!(events.last().unwrap()["usage"]["prompt_tokens"], 3);
    });
}

#[test]
fn tokenize_detokenize_and_render_agree() {
    run(async {
        let addr = plain();
        let tokens = tokenize(addr, "Hello world, héllo 世界").await;
        let (_, text) = post(addr, "/detokenize", json!({"tokens": tokens})).await;
        assert_eq!(text["prompt"], "Hello world, héllo 世界");

        let (_, chat_tokens) = post(
            addr,
            "/tokenize",
            json!({"messages": hi(), "return_token_strs": true}),
        )
        .await;
        assert_eq!(
            chat_tokens["count"],
            chat_tokens["tokens"].as_array().unwrap().len()
        );
        assert_eq!(
            chat_tokens["token_strs"].as_array().unwrap().len(),
            chat_tokens["tokens"].as_array().unwrap().len()
        );
        let (status, rendered) = post(
            addr,
            "/v1/chat/completions/render",
            json!({"messages": hi(), "max_tokens": 7}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{rendered}");
        assert_eq!(rendered["token_ids"], chat_tokens["tokens"]);
        assert_eq!(rendered["sampling_params"]["max_tokens"], 7);

        let (status, rendered) = post(
            addr,
            "/v1/completions/render",
            json!({"prompt": "Hello world, héllo 世界"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{rendered}");
        assert_eq!(rendered[0]["token_ids"], json!(tokens));
    });
}

#[test]
fn generate_endpoint_takes_and_returns_token_ids() {
    run(async {
        let addr = plain();
        let answer = tokenize(addr, PLAIN_TEXT).await;
        let request = json!({"token_ids": [1, 2, 3], "sampling_params": {"max_tokens": 5, "temperature": 0.0}});
        let (status, body) = post(addr, "/inference/v1/generate", request.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["output_mode"], "tokens");
        assert_eq!(body["choices"][0]["token_ids"], json!(answer[..5]));
        assert_eq!(body["choices"][0]["finish_reason"], "length");
        assert_eq!(body["usage"]["prompt_tokens"], 3);

        let mut streamed = request.clone();
        streamed["stream"] = json!(true);
        streamed["output_mode"] = json!("text");
        let events = stream_all(addr, "/inference/v1/generate", streamed).await;
        let ids: Vec<Value> = events
            .iter()
            .flat_map(|e| {
                e["choices"][0]["token_ids"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(
            ids,
            answer[..5].iter().map(|&t| json!(t)).collect::<Vec<_>>()
        );
        let text: String = events
            .iter()
            .filter_map(|e| e["choices"][0]["text"].as_str().map(str::to_owned))
            .collect();
        let (_, expected) = post(addr, "/detokenize", json!({"tokens": answer[..5]})).await;
        assert_eq!(text, expected["prompt"].as_str().unwrap());
    });
}

#[test]
fn auto_tool_choice_returns_tool_calls() {
    run(async {
        let addr = tools();
        let request = json!({"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": weather_tool()});
        let (status, body) = post(addr, "/v1/chat/completions", request.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        assert_eq!(choice["message"]["content"], Value::Null);
        let call = &choice["message"]["tool_calls"][0];
        assert_eq!(call["type"], "function");
        assert!(call["id"].as_str().unwrap().starts_with("chatcmpl-tool-"));
        assert_eq!(call["function"]["name"], "get_weather");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"city": "Paris"}));

        let mut streamed = request.clone();
        streamed["stream"] = json!(true);
        let events = stream_all(addr, "/v1/chat/completions", streamed).await;
        let calls: Vec<Value> = events
            .iter()
            .filter_map(|e| {
                e["choices"].get(0)?["delta"]["tool_calls"]
                    .as_array()
                    .cloned()
            })
            .flatten()
            .collect();
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        assert_eq!(calls[0]["type"], "function");
        assert!(calls[0]["id"].is_string());
        assert!(calls.iter().all(|c| c["index"] == 0));
        let arguments: String = calls
            .iter()
            .filter_map(|c| c["function"]["arguments"].as_str())
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&arguments).unwrap(),
            json!({"city": "Paris"})
        );
        assert_eq!(final_choice(&events)["finish_reason"], "tool_calls");
        assert_eq!(concat_delta(&events, "content").trim(), "");
    });
}

#[test]
fn tool_choice_none_and_named() {
    run(async {
        let addr = tools();
        let messages = json!([{"role": "user", "content": "Weather in Paris?"}]);
        let (_, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": messages, "tools": weather_tool(), "tool_choice": "none"}),
        )
        .await;
        assert_eq!(body["choices"][0]["message"]["content"], TOOL_TEXT);
        assert!(body["choices"][0]["message"].get("tool_calls").is_none());
        assert_eq!(body["choices"][0]["finish_reason"], "stop");

        // A named function with hermes (a parser with a structural tag): vLLM parses
        // the output in hermes' own format, and OpenAI reports `stop`.
        let named = json!({"type": "function", "function": {"name": "get_weather"}});
        let request = json!({"messages": messages, "tools": weather_tool(), "tool_choice": named});
        let (_, body) = post(addr, "/v1/chat/completions", request).await;
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "stop", "{body}");
        assert_eq!(
            choice["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"city\": \"Paris\"}"
        );

        // With a parser held to a JSON schema (pythonic): the output is taken as the
        // function's arguments, streamed as it comes.
        let schema_server = required();
        let request = json!({"messages": messages, "tools": weather_tool(), "tool_choice": named});
        let (_, body) = post(schema_server, "/v1/chat/completions", request.clone()).await;
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "stop");
        assert_eq!(choice["message"]["content"], "");
        assert_eq!(
            choice["message"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert_eq!(
            choice["message"]["tool_calls"][0]["function"]["arguments"],
            REQUIRED_TEXT
        );

        let mut streamed = request;
        streamed["stream"] = json!(true);
        let events = stream_all(schema_server, "/v1/chat/completions", streamed).await;
        let calls: Vec<Value> = events
            .iter()
            .filter_map(|e| {
                e["choices"].get(0)?["delta"]["tool_calls"]
                    .as_array()
                    .cloned()
            })
            .flatten()
            .collect();
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        let arguments: String = calls
            .iter()
            .filter_map(|c| c["function"]["arguments"].as_str())
            .collect();
        assert_eq!(arguments, REQUIRED_TEXT);

        // A named function that is not among the tools is a 400.
        let wrong = json!({"type": "function", "function": {"name": "nope"}});
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": messages, "tools": weather_tool(), "tool_choice": wrong}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "tool_choice");
    });
}

#[test]
fn tool_choice_required_reads_the_json_array() {
    run(async {
        let addr = required();
        let request = json!({
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": weather_tool(),
            "tool_choice": "required",
        });
        let (status, body) = post(addr, "/v1/chat/completions", request.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        assert_eq!(choice["message"]["content"], "");
        let calls = choice["message"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        assert_eq!(calls[0]["function"]["arguments"], "{\"city\": \"Paris\"}");

        let mut streamed = request.clone();
        streamed["stream"] = json!(true);
        let events = stream_all(addr, "/v1/chat/completions", streamed).await;
        let calls: Vec<Value> = events
            .iter()
            .filter_map(|e| {
                e["choices"].get(0)?["delta"]["tool_calls"]
                    .as_array()
                    .cloned()
            })
            .flatten()
            .collect();
        // Announced once (id, name), then the model's text of `parameters` in pieces.
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        assert!(calls[0]["id"].is_string());
        assert!(
            calls[1..]
                .iter()
                .all(|c| c.get("id").is_none() && c["index"] == 0)
        );
        let arguments: String = calls
            .iter()
            .filter_map(|c| c["function"]["arguments"].as_str())
            .collect();
        assert_eq!(arguments, "{\"city\": \"Paris\"}");
        assert_eq!(final_choice(&events)["finish_reason"], "tool_calls");

        // The render endpoint applies the same parser rules: the forced choice's JSON
        // schema (vLLM's `get_json_schema_from_tools`) in the sampling parameters.
        let mut render = request;
        render["include_reasoning"] = json!(false);
        let (status, rendered) = post(addr, "/v1/chat/completions/render", render).await;
        assert_eq!(status, StatusCode::OK, "{rendered}");
        let schema = &rendered["sampling_params"]["structured_outputs"]["json"];
        assert_eq!(schema["type"], "array", "{rendered}");
        assert_eq!(schema["minItems"], 1);
        assert_eq!(
            schema["items"]["anyOf"][0]["properties"]["name"]["enum"],
            json!(["get_weather"])
        );
        assert_eq!(rendered["reasoning_ended"], true);
        // No reasoning parser: no kwargs for one.
        assert!(rendered["reasoning_parser_kwargs"].is_null());
    });
}

#[test]
fn reasoning_is_split_from_content_streamed_and_whole() {
    run(async {
        let addr = reasoning();
        let (status, body) = post(addr, "/v1/chat/completions", json!({"messages": hi()})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let message = &body["choices"][0]["message"];
        let reasoning = message["reasoning"].as_str().unwrap();
        let content = message["content"].as_str().unwrap();
        assert!(reasoning.contains("The user greets me."), "{reasoning:?}");
        assert!(
            content.contains("Hello there!") && !content.contains("think"),
            "{content:?}"
        );

        let events = stream_all(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "stream": true}),
        )
        .await;
        assert_eq!(concat_delta(&events, "reasoning"), reasoning);
        assert_eq!(concat_delta(&events, "content"), content);

        let (_, hidden) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "include_reasoning": false}),
        )
        .await;
        assert_eq!(hidden["choices"][0]["message"]["reasoning"], Value::Null);
        assert_eq!(hidden["choices"][0]["message"]["content"], content);

        // The engine request's `reasoning_ended` is vLLM's explicit answer for the
        // prompt (the render endpoint shows what the chat path sends): the qwen3
        // parser reads an open turn as reasoning, and the empty think block Qwen3's
        // template renders with thinking off as ended.
        for (kwargs, ended) in [
            (json!({}), false),
            (json!({"enable_thinking": false}), true),
        ] {
            let body = json!({"messages": hi(), "chat_template_kwargs": kwargs});
            let (status, rendered) = post(addr, "/v1/chat/completions/render", body).await;
            assert_eq!(status, StatusCode::OK, "{rendered}");
            assert_eq!(rendered["reasoning_ended"], ended, "{kwargs}");
            assert!(
                rendered["reasoning_parser_kwargs"].is_object(),
                "{rendered}"
            );
        }
    });
}

/// Asserts an OpenAI error body with this status and parameter.
fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, param: Option<&str>) {
    assert_eq!(status, expected, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], expected.as_u16(), "{body}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["type"].is_string(), "{body}");
    if let Some(param) = param {
        assert_eq!(error["param"], param, "{body}");
    }
}

#[test]
fn bad_json_and_bad_parameters_are_clear_400s() {
    run(async {
        let addr = plain();
        let (status, body) = post_raw(addr, "/v1/chat/completions", "{\"messages\": [").await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, None);
        assert_eq!(body["error"]["type"], "BadRequestError");
        let (status, body) = post_raw(addr, "/v1/completions", "{\"max_tokens\": 3}").await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, None);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("prompt"),
            "{body}"
        );

        // vLLM's bodies, as recorded from vLLM in vllm-chat's render-mode fixture.
        let cases = [
            (
                json!({"temperature": 3.0}),
                Some("temperature"),
                "temperature must be in [0, 2], got 3.0. (parameter=temperature, value=3.0)",
            ),
            (
                json!({"top_p": 0.0}),
                Some("top_p"),
                "top_p must be in (0, 1], got 0.0. (parameter=top_p, value=0.0)",
            ),
            (
                json!({"max_tokens": 0}),
                Some("max_tokens"),
                "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)",
            ),
            (
                json!({"presence_penalty": 5}),
                None,
                "presence_penalty must be in [-2, 2], got 5.0.",
            ),
            (
                json!({"logprobs": true, "top_logprobs": 50}),
                Some("logprobs"),
                "Requested sample logprobs of 50, which is greater than max allowed: 20",
            ),
            (
                json!({"stream_options": {"include_usage": true}}),
                Some("stream_options"),
                "Stream options can only be defined when `stream=True`. (parameter=stream_options)",
            ),
            (
                json!({"stop": [""]}),
                None,
                "stop cannot contain an empty string.",
            ),
        ];
        for (extra, param, message) in cases {
            let mut request = json!({"messages": hi()});
            for (k, v) in extra.as_object().unwrap() {
                request[k] = v.clone();
            }
            let (status, body) = post(addr, "/v1/chat/completions", request).await;
            assert_error(status, &body, StatusCode::BAD_REQUEST, param);
            assert_eq!(body["error"]["message"], message);
            if param.is_none() {
                assert!(body["error"]["param"].is_null(), "{body}");
            }
        }
        // Without a tool parser, only `none` (and `auto` with --enable-auto-tool-choice) work.
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "tools": weather_tool(), "tool_choice": "required"}),
        )
        .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, None);
        assert_eq!(
            body["error"]["message"],
            "tool_choice=\"required\" requires --tool-call-parser to be set"
        );
        // Tools without tool_choice mean `auto` (vLLM's request validator), which
        // needs --enable-auto-tool-choice.
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "tools": weather_tool()}),
        )
        .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, None);
        assert_eq!(
            body["error"]["message"],
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        );
        // n > 1 is served; greedy sampling refuses it, as vLLM's `SamplingParams` does.
        let (status, body) = post(
            addr,
            "/v1/chat/completions",
            json!({"messages": hi(), "n": 2, "temperature": 0}),
        )
        .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, None);
        assert_eq!(
            body["error"]["message"],
            "n must be 1 when using greedy sampling, got 2."
        );
        let (status, body) =
            post(addr, "/v1/completions", json!({"prompt": "x", "top_k": -5})).await;
        // vLLM names no parameter for `top_k` (its `_verify_args` raises a plain
        // `ValueError`).
        assert_error(status, &body, StatusCode::BAD_REQUEST, None);
        assert_eq!(
            body["error"]["message"],
            "top_k must be 0 (disable), or at least 1, got -5."
        );
    });
}

#[test]
fn unknown_model_is_a_404() {
    run(async {
        let addr = plain();
        for path in ["/v1/chat/completions", "/v1/completions", "/tokenize"] {
            let body = json!({"model": "gpt-9", "messages": hi(), "prompt": "x"});
            let (status, body) = post(addr, path, body).await;
            assert_error(status, &body, StatusCode::NOT_FOUND, None);
            assert_eq!(body["error"]["type"], "NotFoundError");
        }
    });
}

#[test]
fn json_endpoints_refuse_other_content_types_as_vllm_does() {
    run(async {
        let addr = plain();
        let body = json!({"messages": hi()}).to_string();
        let expected = json!({"error": {
            "message": "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed",
            "type": "Bad Request", "param": null, "code": 400}});
        for path in [
            "/v1/chat/completions",
            "/tokenize",
            "/v1/chat/completions/render",
        ] {
            for content_type in ["text/plain", "application/x-www-form-urlencoded", ""] {
                let response = send_with(
                    addr,
                    Method::POST,
                    path,
                    Some(body.clone()),
                    &[("content-type", content_type)],
                )
                .await;
                assert_eq!(
                    response.status,
                    StatusCode::BAD_REQUEST,
                    "{path} {content_type}"
                );
                assert_eq!(response.json().await, expected, "{path} {content_type}");
            }
        }
        // Parameters and case do not matter.
        let response = send_with(
            addr,
            Method::POST,
            "/tokenize",
            Some(json!({"prompt": "hi"}).to_string()),
            &[("content-type", "Application/JSON; charset=utf-8")],
        )
        .await;
        assert_eq!(response.status, StatusCode::OK);
    });
}

#[test]
fn token_ids_outside_the_vocabulary_never_reach_the_engine() {
    run(async {
        let addr = plain();
        // Qwen3's config.json: vocab_size 151936.
        let cases = [
            (
                "/v1/chat/completions",
                json!({"messages": hi(), "stop_token_ids": [5, 151936]}),
                "token_id(s) [151936] in stop_token_ids contain out-of-vocab token ids. Vocabulary size: 151936 (parameter=stop_token_ids, value=[151936])",
                Value::from("stop_token_ids"),
            ),
            (
                "/v1/chat/completions",
                json!({"messages": hi(), "logit_bias": {"-1": 1, "7": 2, "999999": 3}}),
                "token_id(s) [-1, 999999] in logit_bias contain out-of-vocab token ids. Vocabulary size: 151936 (parameter=logit_bias, value=[-1, 999999])",
                Value::from("logit_bias"),
            ),
            (
                "/v1/completions",
                json!({"prompt": "x", "allowed_token_ids": []}),
                "allowed_token_ids is not None and empty! (parameter=allowed_token_ids, value=[])",
                Value::from("allowed_token_ids"),
            ),
            (
                "/v1/completions",
                json!({"prompt": "x", "allowed_token_ids": [1, 200000]}),
                "allowed_token_ids contains out-of-vocab token id! (parameter=allowed_token_ids, value=[200000])",
                Value::from("allowed_token_ids"),
            ),
            (
                "/v1/completions",
                json!({"prompt": [9707, 4000000000u64]}),
                "Token id 4000000000 is out of vocabulary",
                Value::Null,
            ),
            (
                "/inference/v1/generate",
                json!({"token_ids": [9707, 151936], "sampling_params": {"max_tokens": 2}}),
                "Token id 151936 is out of vocabulary",
                Value::Null,
            ),
        ];
        for (path, body, message, param) in cases {
            let (status, answer) = post(addr, path, body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
            assert_eq!(answer["error"]["message"], message, "{path}");
            assert_eq!(answer["error"]["param"], param, "{path}");
        }
        // The model's own last ids are fine, beyond the tokenizer's (which ends at 151668).
        let (status, _) = post(
            addr,
            "/inference/v1/generate",
            json!({"token_ids": [151668, 151935], "sampling_params": {"max_tokens": 1, "stop_token_ids": [151935]}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    });
}

/// Token counts of the streamed chunks of a generate answer.
fn chunk_sizes(events: &[Value]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| e["choices"][0]["token_ids"].as_array())
        .map(Vec::len)
        .collect()
}

#[test]
fn stream_interval_batches_tokens_as_vllm_does() {
    run(async {
        // An engine slow enough that every output arrives alone, so the chunking is
        // the server's: the first output at once, then every `interval` tokens, the
        // last at the finish (the compare script checks this against vLLM).
        let server = start(ServeConfig {
            stream_interval: 2,
            engine: EngineSource::Embedded(MockSettings {
                text: PLAIN_TEXT.into(),
                tokens_per_second: 100.0,
            }),
            ..config(PLAIN_TEXT)
        });
        let addr = server.addr;
        let generate = |interval: Option<u32>| {
            let mut params = json!({"max_tokens": 7});
            if let Some(interval) = interval {
                params["stream_interval"] = json!(interval);
            }
            json!({"token_ids": [9707], "sampling_params": params, "stream": true})
        };
        let events = stream_all(addr, "/inference/v1/generate", generate(None)).await;
        assert_eq!(chunk_sizes(&events), [1, 2, 2, 2]);
        // A request raises the server's interval, never lowers it.
        let events = stream_all(addr, "/inference/v1/generate", generate(Some(3))).await;
        assert_eq!(chunk_sizes(&events), [1, 3, 3]);
        let events = stream_all(addr, "/inference/v1/generate", generate(Some(1))).await;
        assert_eq!(chunk_sizes(&events), [1, 2, 2, 2]);
        // The text is the same, only cut differently.
        let body = json!({"messages": hi(), "stream": true, "stream_interval": 4});
        let events = stream_all(addr, "/v1/chat/completions", body).await;
        assert_eq!(concat_delta(&events, "content"), PLAIN_TEXT);
        // pydantic's field constraint, as vLLM's validation handler answers it.
        let body = json!({"messages": hi(), "stream": true, "stream_interval": 0});
        let (status, body) = post(addr, "/v1/chat/completions", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["type"], "Bad Request");
        assert_eq!(body["error"]["param"], "body.stream_interval");
        let (status, body) = post(addr, "/inference/v1/generate", generate(Some(0))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            body["error"]["message"],
            "stream_interval must be at least 1, got 0. (parameter=stream_interval, value=0)"
        );
    });
}
