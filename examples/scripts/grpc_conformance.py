"""The gRPC services of `serve --grpc-port` side by side with `vllm-rs serve --grpc-port` 0.33.0.

Both servers run in front of their own `mock-engine` (the same flags), launched exactly
as `control_conformance.py` launches them (its helpers are imported, not copied); the
same sequence of gRPC calls goes to each: every `vllm.Control` RPC (server and model
info, aborts, LoRA load / unload / list and their refusals, KV event sources, pause
modes with a request in flight, sleep / wake-up, the weight-transfer calls, the weight
version, with and without a weight-transfer backend, shutdown) and `vllm.Inference` `Generate` / `GenerateStream` (tokens and text
in; token ids, text, logprobs and candidates out; stop strings and tokens; calls past
their deadline, unary and streamed; and the refusals: bad token ids, bad sampling
parameters, unknown adapters and models, ...),
plus `grpc.health.v1.Health`. The answers must be equal (messages as protobuf JSON
with every field, or status code and message), after masking what legitimately
differs (engine instance ids, utility call ids, random request ids in messages).

    HF_HUB_OFFLINE=1 PYTHON_WITH_GRPCIO examples/scripts/grpc_conformance.py \\
        --serve target/release/examples/serve --mock-engine target/release/examples/mock-engine \\
        [--vllm-rs $REF/vllm_src/vllm/vllm-rs] [--model $REF/models/qwen3]

The Python needs `grpcio`, `grpcio-tools` (the stubs are generated from
`examples/proto/` at start) and `grpcio-health-checking`. Prints PASS/FAIL per call,
KNOWN for the listed differences; exits non-zero on any FAIL.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_conformance as cc  # noqa: E402  (the launch helpers)

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto")

# Where the two servers differ on purpose (reported, not failed).
KNOWN_DIFFERENCES = {
    "Shutdown (external engine)":
        "vllm-rs launched its engine and stops it; serve was given an external engine and "
        "refuses, as vllm-rs does for an engine it does not manage",
    "reflection: list services":
        "vllm-rs 0.33.0 has no server reflection; serve adds grpc.reflection.v1",
    "Generate past its deadline":
        "vllm-rs serves with tonic's timeout layer, which answers CANCELLED \"Timeout "
        "expired\" when it beats the client's own timer (DEADLINE_EXCEEDED); serve enforces "
        "the deadline itself and always answers DEADLINE_EXCEEDED, as gRPC specifies",
}


def stubs(workdir):
    """Python stubs of examples/proto, generated into workdir and imported."""
    out = os.path.join(workdir, "stubs")
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", PROTO_DIR,
                    f"--python_out={out}", f"--grpc_python_out={out}",
                    "control.proto", "inference.proto"], check=True)
    sys.path.insert(0, out)
    import control_pb2, control_pb2_grpc, inference_pb2, inference_pb2_grpc  # noqa: E401
    return control_pb2, control_pb2_grpc, inference_pb2, inference_pb2_grpc


def normalize(text):
    text = re.sub(r"call_id=\d+", "call_id=N", text)
    # vLLM's engine names itself by its start time (`VllmConfig.instance_id`, time_ns).
    text = re.sub(r'"instance_id": "\d+"', '"instance_id": "TIME_NS"', text)
    text = re.sub(r"mock-engine-(\d+)-\d+", r"mock-engine-\1-PID", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", text)
    return text


class Battery:
    """The calls, against one server's gRPC port."""

    def __init__(self, port, pb):
        import grpc
        from google.protobuf import json_format
        self.grpc, self.json_format = grpc, json_format
        self.C, CG, self.I, IG = pb
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.ctl = CG.ControlStub(self.channel)
        self.inf = IG.InferenceStub(self.channel)

    def dump(self, message):
        return json.loads(normalize(json.dumps(self.json_format.MessageToDict(
            message, preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True), sort_keys=True)))

    def call(self, method, request, metadata=None):
        try:
            reply = method(request, timeout=60, metadata=metadata)
            if hasattr(reply, "ListFields"):
                return {"ok": self.dump(reply)}
            return {"ok": [self.dump(m) for m in reply]}
        except self.grpc.RpcError as e:
            return {"code": e.code().name, "details": normalize(e.details() or "")}

    def past_deadline(self, method, request, timeout):
        """A call given `timeout` seconds that needs more: its status as the client sees
        it (how many messages a stream got first depends on timing, and so does whether
        the client's timer or the server's answer ends it: grpcio says "Stream removed
        (Deadline Exceeded)" for the former on a stream, the server "Deadline Exceeded")."""
        try:
            reply = method(request, timeout=timeout)
            if not hasattr(reply, "ListFields"):
                for _ in reply:
                    pass
            return {"ok": "answered before the deadline"}
        except self.grpc.RpcError as e:
            details = (e.details() or "").replace("Stream removed (Deadline Exceeded)",
                                                  "Deadline Exceeded")
            return {"code": e.code().name, "details": details}

    def background(self, method, request, results, key):
        def run():
            results[key] = self.call(method, request)
        t = threading.Thread(target=run)
        t.start()
        return t


def finish_of(answer):
    """The finish reason of a unary or streamed answer (or its failure)."""
    if "ok" not in answer:
        return answer
    messages = answer["ok"] if isinstance(answer["ok"], list) else [answer["ok"]]
    for m in reversed(messages):
        info = (m.get("outputs") or {}).get("finish_info")
        if info:
            return info.get("finish_reason")
    return None


def battery(port, pb, model):
    b = Battery(port, pb)
    C, I = b.C, b.I
    S, R, CT = I.StoppingCriteria, I.ResponseOptions, I.CandidateTokens

    def G(**kw):
        kw.setdefault("token_ids", I.TokenIds(ids=[9707, 11, 1879]))
        return I.GenerateRequest(**kw)

    def c(name, method, request, metadata=None):
        return name, b.call(method, request, metadata)

    yield c("GetServerInfo", b.ctl.GetServerInfo, C.GetServerInfoRequest())
    yield c("GetModelInfo", b.ctl.GetModelInfo, C.GetModelInfoRequest())
    yield c("GetKvEventSources (none)", b.ctl.GetKvEventSources, C.GetKvEventSourcesRequest())
    yield c("IsPaused", b.ctl.IsPaused, C.IsPausedRequest())
    yield c("IsSleeping", b.ctl.IsSleeping, C.IsSleepingRequest())
    yield c("GetWeightVersion", b.ctl.GetWeightVersion, C.GetWeightVersionRequest())
    yield c("ListLoras (none)", b.ctl.ListLoras, C.ListLorasRequest())

    # Generate: tokens and text in, what comes out
    gen, stream = b.inf.Generate, b.inf.GenerateStream
    yield c("Generate to EOS", gen, G())
    yield c("Generate max_new_tokens=5", gen, G(stopping=S(max_new_tokens=5)))
    yield c("Generate text prompt", gen, I.GenerateRequest(text="Hello", stopping=S(max_new_tokens=3)))
    yield c("Generate token ids out, no text", gen, G(stopping=S(max_new_tokens=3),
            response=R(output_text=False, output_token_ids=True, prompt_token_ids=True)))
    yield c("Generate logprobs + top-2 candidates, prompt logprobs", gen, G(
        stopping=S(max_new_tokens=3),
        response=R(output_token_ids=True, output_logprobs=True, output_candidates=CT(top_n=2),
                   prompt_token_ids=True, prompt_logprobs=True, prompt_candidates=CT(top_n=1))))
    yield c("Generate logprobs without candidates", gen, G(stopping=S(max_new_tokens=2),
            response=R(output_logprobs=True)))
    yield c("Generate prompt logprobs only", gen, G(stopping=S(max_new_tokens=1),
            response=R(prompt_logprobs=True)))
    yield c("Generate candidates as token ids", gen, G(stopping=S(max_new_tokens=2),
            response=R(output_logprobs=True, output_candidates=CT(token_ids=I.TokenIds(ids=[5])))))
    yield c("Generate candidates without logprobs", gen, G(stopping=S(max_new_tokens=2),
            response=R(output_candidates=CT(top_n=2))))
    yield c("Generate stop string", gen, G(stopping=S(max_new_tokens=10, stop_strings=[" am"])))
    yield c("Generate stop string included", gen, G(stopping=S(max_new_tokens=10, stop_strings=[" am"],
                                                               include_stop_strings=True)))
    yield c("Generate stop token", gen, G(stopping=S(max_new_tokens=10, stop_token_ids=[358]),
                                          response=R(output_token_ids=True)))
    yield c("Generate ignore_eos", gen, G(stopping=S(max_new_tokens=16, ignore_eos=True)))
    yield c("Generate min_new_tokens", gen, G(stopping=S(max_new_tokens=20, min_new_tokens=16)))
    yield c("Generate max_new_tokens beyond the context", gen, G(stopping=S(max_new_tokens=40000)))
    yield c("Generate truncate_prompt_tokens", gen, G(truncate_prompt_tokens=1, stopping=S(max_new_tokens=1)))
    yield c("Generate sampling knobs", gen, G(
        temperature=0.5, sampling=I.RandomSampling(top_k=5, top_p=0.9, min_p=0.1, seed=-5),
        decoding=I.DecodingParameters(presence_penalty=0.5, frequency_penalty=0.5,
                                      repetition_penalty=1.1, logit_bias={5: 1.0},
                                      allowed_token_ids=[9707, 0, 358]),
        stopping=S(max_new_tokens=2)))
    yield c("Generate regex constraint", gen, G(decoding=I.DecodingParameters(regex="a+"),
                                                stopping=S(max_new_tokens=2)))
    yield c("Generate the served model by name", gen, G(model=model, stopping=S(max_new_tokens=1)))
    yield c("Generate request fields not forwarded", gen, G(
        session_id="s", watermarking=False, priority=3,
        kv=I.KVCacheParameters(cache_salt="salt", bypass_prefix_cache=True),
        stopping=S(max_new_tokens=1, thinking_token_budget=5)))
    yield c("GenerateStream", stream, G(stopping=S(max_new_tokens=3)))
    yield c("GenerateStream token ids, logprobs", stream, G(stopping=S(max_new_tokens=2),
            response=R(output_token_ids=True, output_logprobs=True, prompt_token_ids=True)))
    yield c("GenerateStream stop string", stream, G(stopping=S(max_new_tokens=10, stop_strings=[" am"])))

    # Generate: refusals
    yield c("Generate no prompt", gen, I.GenerateRequest(request_id="r"))
    yield c("Generate empty token ids", gen, G(token_ids=I.TokenIds(ids=[])))
    yield c("Generate empty text", gen, I.GenerateRequest(text=""))
    yield c("Generate token id out of vocabulary", gen, G(token_ids=I.TokenIds(ids=[1, 10**9])))
    yield c("GenerateStream token id out of vocabulary", stream, G(token_ids=I.TokenIds(ids=[10**9])))
    yield c("Generate n=2", gen, G(sampling=I.RandomSampling(num_sequences=2)))
    yield c("GenerateStream n=2", stream, G(sampling=I.RandomSampling(num_sequences=2)))
    yield c("Generate temperature -1", gen, G(temperature=-1))
    yield c("Generate temperature 2.5", gen, G(temperature=2.5))
    yield c("Generate top_p 0", gen, G(sampling=I.RandomSampling(top_p=0)))
    yield c("Generate top_p 2", gen, G(sampling=I.RandomSampling(top_p=2)))
    yield c("Generate repetition_penalty -1", gen, G(decoding=I.DecodingParameters(repetition_penalty=-1)))
    yield c("Generate min_new_tokens > max_new_tokens", gen, G(stopping=S(max_new_tokens=2, min_new_tokens=5)))
    yield c("Generate logit_bias out of vocabulary", gen, G(decoding=I.DecodingParameters(logit_bias={10**9: 1.0})))
    yield c("Generate allowed_token_ids out of vocabulary", gen,
            G(decoding=I.DecodingParameters(allowed_token_ids=[10**9])))
    yield c("Generate stop_token_ids out of vocabulary", gen, G(stopping=S(stop_token_ids=[10**9])))
    yield c("Generate bad JSON schema", gen, G(decoding=I.DecodingParameters(json="{")))
    yield c("Generate empty bad word", gen,
            G(decoding=I.DecodingParameters(bad_words_token_ids=[I.TokenIds(ids=[])])))
    yield c("Generate top-30 candidates", gen, G(response=R(output_logprobs=True,
                                                              output_candidates=CT(top_n=30))))
    yield c("Generate all candidates", gen, G(response=R(output_logprobs=True,
                                                           output_candidates=CT(all=True))))
    yield c("Generate top-30 prompt candidates", gen, G(response=R(prompt_logprobs=True,
                                                                     prompt_candidates=CT(top_n=30))))
    yield c("Generate unknown LoRA adapter", gen, G(lora_name="nope"))
    yield c("Generate unknown model", gen, G(model="nope"))
    yield c("Generate prompt beyond the context", gen, G(token_ids=I.TokenIds(ids=[1] * 40000)))
    yield c("Generate media", gen, G(media=[I.MediaItem(modality=1, url="http://x")]))

    # LoRA adapters (VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES is the LoRA directory)
    lora = cc.LORA_DIR
    yield c("LoadLora a (local)", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="a", source_path=f"{lora}/a"))
    yield c("LoadLora hub id", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="hub", source_path="org/hub-adapter"))
    yield c("LoadLora a again", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="a", source_path=f"{lora}/b"))
    yield c("LoadLora the served model's name", b.ctl.LoadLora, C.LoadLoraRequest(lora_name=model, source_path="x/y"))
    yield c("LoadLora empty name", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="", source_path="x/y"))
    yield c("LoadLora empty path", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="q", source_path=""))
    yield c("LoadLora missing local path", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="b", source_path=f"{lora}/nope"))
    yield c("LoadLora outside the prefixes", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="b", source_path="/etc"))
    yield c("LoadLora relative path", b.ctl.LoadLora, C.LoadLoraRequest(lora_name="b", source_path="./rel"))
    yield c("ListLoras", b.ctl.ListLoras, C.ListLorasRequest())
    yield c("Generate on adapter a", gen, G(lora_name="a", stopping=S(max_new_tokens=2)))
    yield c("UnloadLora a", b.ctl.UnloadLora, C.UnloadLoraRequest(lora_name="a"))
    yield c("UnloadLora a again", b.ctl.UnloadLora, C.UnloadLoraRequest(lora_name="a"))
    yield c("UnloadLora empty name", b.ctl.UnloadLora, C.UnloadLoraRequest(lora_name=""))
    yield c("ListLoras after unloading", b.ctl.ListLoras, C.ListLorasRequest())
    yield c("Generate on the unloaded adapter", gen, G(lora_name="a", stopping=S(max_new_tokens=1)))

    # deadlines: unary and streamed calls that need seconds, given half a second; then
    # nothing may still run (a pause that waits for requests in flight returns at once)
    slow = dict(stopping=S(max_new_tokens=400, ignore_eos=True))
    yield "Generate past its deadline", b.past_deadline(gen, G(**slow), 0.5)
    yield "GenerateStream past its deadline", b.past_deadline(stream, G(**slow), 0.5)
    time.sleep(0.2)
    started = time.time()
    paused = b.call(b.ctl.PauseGeneration, C.PauseGenerationRequest(mode=C.PAUSE_MODE_WAIT))
    yield "nothing runs after the deadlines", {
        "pause (wait) answer": paused, "returned within 2 s": time.time() - started < 2}
    yield c("ResumeGeneration after the deadlines", b.ctl.ResumeGeneration,
            C.ResumeGenerationRequest())

    # aborts
    long = dict(stopping=S(max_new_tokens=400, ignore_eos=True))
    results = {}
    t = b.background(stream, G(request_id="abort-me", **long), results, "by id")
    time.sleep(1.0)
    yield c("Abort by id (request in flight)", b.ctl.Abort, C.AbortRequest(request_ids=["abort-me"]))
    t.join(60)
    yield "stream finish after Abort by id", {"finish": finish_of(results["by id"])}
    t = b.background(gen, G(**long), results, "all")
    time.sleep(1.0)
    yield c("Abort with no ids (request in flight)", b.ctl.Abort, C.AbortRequest())
    t.join(60)
    yield "Generate finish after Abort with no ids", {"finish": finish_of(results["all"])}
    yield c("Abort unknown id", b.ctl.Abort, C.AbortRequest(request_ids=["nope"]))

    # pause modes, with a request in flight
    yield c("PauseGeneration unspecified mode", b.ctl.PauseGeneration, C.PauseGenerationRequest())
    yield c("IsPaused (paused)", b.ctl.IsPaused, C.IsPausedRequest())
    yield c("Generate while paused", gen, G(stopping=S(max_new_tokens=1)))
    yield c("GenerateStream while paused", stream, G(stopping=S(max_new_tokens=1)))
    yield c("ResumeGeneration", b.ctl.ResumeGeneration, C.ResumeGenerationRequest())
    yield c("PauseGeneration bad mode", b.ctl.PauseGeneration, C.PauseGenerationRequest(mode=9))
    yield c("IsPaused after the bad mode", b.ctl.IsPaused, C.IsPausedRequest())
    t = b.background(stream, G(**long), results, "abort")
    time.sleep(1.0)
    yield c("PauseGeneration abort (request in flight)", b.ctl.PauseGeneration,
            C.PauseGenerationRequest(mode=C.PAUSE_MODE_ABORT))
    t.join(60)
    yield "stream finish after pause abort", {"finish": finish_of(results["abort"])}
    yield c("ResumeGeneration after abort", b.ctl.ResumeGeneration, C.ResumeGenerationRequest())
    t = b.background(gen, G(stopping=S(max_new_tokens=60, ignore_eos=True)), results, "wait")
    time.sleep(0.5)
    yield c("PauseGeneration wait (request in flight)", b.ctl.PauseGeneration,
            C.PauseGenerationRequest(mode=C.PAUSE_MODE_WAIT, clear_cache=False))
    t.join(60)
    yield "Generate finish after pause wait", {"finish": finish_of(results["wait"])}
    yield c("Generate while paused (wait)", gen, G(stopping=S(max_new_tokens=1)))
    yield c("ResumeGeneration after wait", b.ctl.ResumeGeneration, C.ResumeGenerationRequest())
    t = b.background(gen, G(stopping=S(max_new_tokens=60, ignore_eos=True)), results, "keep")
    time.sleep(0.5)
    yield c("PauseGeneration keep (request in flight)", b.ctl.PauseGeneration,
            C.PauseGenerationRequest(mode=C.PAUSE_MODE_KEEP))
    yield c("IsPaused (keep)", b.ctl.IsPaused, C.IsPausedRequest())
    time.sleep(0.5)
    yield c("ResumeGeneration after keep", b.ctl.ResumeGeneration, C.ResumeGenerationRequest())
    t.join(60)
    yield "Generate finish after pause keep and resume", {"finish": finish_of(results["keep"])}

    # sleep and wake-up
    for name, request in [("default", C.SleepRequest()), ("level 0", C.SleepRequest(level=0)),
                          ("level 2 keep", C.SleepRequest(level=2, mode=C.PAUSE_MODE_KEEP)),
                          ("level 7", C.SleepRequest(level=7)), ("bad mode", C.SleepRequest(mode=9))]:
        yield c(f"Sleep {name}", b.ctl.Sleep, request)
        yield c(f"IsSleeping after Sleep {name}", b.ctl.IsSleeping, C.IsSleepingRequest())
        yield c(f"WakeUp weights after Sleep {name}", b.ctl.WakeUp, C.WakeUpRequest(tags=["weights"]))
        yield c(f"IsSleeping after waking weights ({name})", b.ctl.IsSleeping, C.IsSleepingRequest())
        yield c(f"WakeUp after Sleep {name}", b.ctl.WakeUp, C.WakeUpRequest())
        yield c(f"IsSleeping after WakeUp ({name})", b.ctl.IsSleeping, C.IsSleepingRequest())
    yield c("WakeUp unknown tag", b.ctl.WakeUp, C.WakeUpRequest(tags=["bogus"]))

    # the weight-transfer sequence (the mock engine reports no backend) and the version
    for name, method, request in [
        ("InitWeightTransferEngine", b.ctl.InitWeightTransferEngine,
         C.InitWeightTransferEngineRequest(init_info_json=b'{"master_address": "127.0.0.1"}')),
        ("InitWeightTransferEngine bad JSON", b.ctl.InitWeightTransferEngine,
         C.InitWeightTransferEngineRequest(init_info_json=b"{")),
        ("StartWeightUpdate", b.ctl.StartWeightUpdate, C.StartWeightUpdateRequest()),
        ("StartDraftWeightUpdate", b.ctl.StartDraftWeightUpdate, C.StartDraftWeightUpdateRequest()),
        ("UpdateWeights", b.ctl.UpdateWeights, C.UpdateWeightsRequest(update_info_json=b'{"names": ["w"]}')),
        ("FinishWeightUpdate", b.ctl.FinishWeightUpdate, C.FinishWeightUpdateRequest(weight_version="s1")),
        ("UpdateWeightVersion", b.ctl.UpdateWeightVersion, C.UpdateWeightVersionRequest(weight_version="v9")),
        ("UpdateWeightVersion empty", b.ctl.UpdateWeightVersion, C.UpdateWeightVersionRequest()),
        ("GetWeightVersion (v9)", b.ctl.GetWeightVersion, C.GetWeightVersionRequest()),
    ]:
        yield c(name, method, request)
    yield c("Generate after the version change", gen, G(stopping=S(max_new_tokens=1)))

    # health
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    health = health_pb2_grpc.HealthStub(b.channel)
    for service in ["", "vllm.Inference", "vllm.Control", "nope"]:
        yield c(f"Health.Check {service!r}", health.Check, health_pb2.HealthCheckRequest(service=service))


def events_battery(port, pb, model):
    """An engine with KV-cache events, and `--api-key` (not applied to gRPC)."""
    b = Battery(port, pb)
    C, I = b.C, b.I
    yield "GetKvEventSources", b.call(b.ctl.GetKvEventSources, C.GetKvEventSourcesRequest())
    yield "GetServerInfo without a key", b.call(b.ctl.GetServerInfo, C.GetServerInfoRequest())
    yield "GetServerInfo wrong key", b.call(b.ctl.GetServerInfo, C.GetServerInfoRequest(),
                                            [("authorization", "Bearer nope")])
    yield "Generate without a key", b.call(b.inf.Generate, I.GenerateRequest(
        token_ids=I.TokenIds(ids=[1]), stopping=I.StoppingCriteria(max_new_tokens=1)))
    # (VLLM_ALLOW_RUNTIME_LORA_UPDATING unset, no --enable-lora)
    yield "LoadLora without run-time updates", b.call(b.ctl.LoadLora, C.LoadLoraRequest(
        lora_name="hub", source_path="org/hub-adapter"))
    yield "ListLoras without run-time updates", b.call(b.ctl.ListLoras, C.ListLorasRequest())
    # (VLLM_SERVER_DEV_MODE unset)
    yield "PauseGeneration without dev mode", b.call(b.ctl.PauseGeneration, C.PauseGenerationRequest())
    yield "ResumeGeneration without dev mode", b.call(b.ctl.ResumeGeneration, C.ResumeGenerationRequest())
    try:
        from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
        reflection = reflection_pb2_grpc.ServerReflectionStub(b.channel)
        replies = reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
        services = sorted(s.name for r in replies for s in r.list_services_response.service)
        yield "reflection: list services", {"services": services}
    except ImportError:
        pass
    except b.grpc.RpcError as e:
        yield "reflection: list services", {"code": e.code().name}


def weights_battery(port, pb, model):
    """An engine reporting a weight-transfer backend: the whole sequence and its refusals."""
    b = Battery(port, pb)
    C = b.C
    rl = b.call(b.ctl.GetServerInfo, C.GetServerInfoRequest())
    yield "GetServerInfo rl_capabilities (backend)", (rl.get("ok") or rl).get("rl_capabilities", rl)
    for name, method, request in [
        ("StartWeightUpdate (not initialized)", b.ctl.StartWeightUpdate, C.StartWeightUpdateRequest()),
        ("InitWeightTransferEngine bad JSON", b.ctl.InitWeightTransferEngine,
         C.InitWeightTransferEngineRequest(init_info_json=b"{")),
        ("InitWeightTransferEngine not an object", b.ctl.InitWeightTransferEngine,
         C.InitWeightTransferEngineRequest(init_info_json=b"5")),
        ("InitWeightTransferEngine empty", b.ctl.InitWeightTransferEngine,
         C.InitWeightTransferEngineRequest()),
        ("InitWeightTransferEngine", b.ctl.InitWeightTransferEngine,
         C.InitWeightTransferEngineRequest(init_info_json=b'{"master_address": "127.0.0.1", "world_size": 2}')),
        ("UpdateWeights (not started)", b.ctl.UpdateWeights,
         C.UpdateWeightsRequest(update_info_json=b'{"names": ["w"]}')),
        ("StartDraftWeightUpdate", b.ctl.StartDraftWeightUpdate, C.StartDraftWeightUpdateRequest()),
        ("StartWeightUpdate", b.ctl.StartWeightUpdate, C.StartWeightUpdateRequest()),
        ("StartWeightUpdate again", b.ctl.StartWeightUpdate, C.StartWeightUpdateRequest()),
        ("UpdateWeights", b.ctl.UpdateWeights, C.UpdateWeightsRequest(update_info_json=b'{"names": ["w"]}')),
        ("UpdateWeights list", b.ctl.UpdateWeights,
         C.UpdateWeightsRequest(update_info_json=b'[{"names": ["w"]}]')),
        ("UpdateWeights not an object", b.ctl.UpdateWeights, C.UpdateWeightsRequest(update_info_json=b"7")),
        ("UpdateWeights empty", b.ctl.UpdateWeights, C.UpdateWeightsRequest()),
        ("FinishWeightUpdate step-1", b.ctl.FinishWeightUpdate,
         C.FinishWeightUpdateRequest(weight_version="step-1")),
        ("GetWeightVersion (step-1)", b.ctl.GetWeightVersion, C.GetWeightVersionRequest()),
        ("FinishWeightUpdate (not started)", b.ctl.FinishWeightUpdate, C.FinishWeightUpdateRequest()),
        ("UpdateWeightVersion v9", b.ctl.UpdateWeightVersion, C.UpdateWeightVersionRequest(weight_version="v9")),
        ("GetWeightVersion (v9)", b.ctl.GetWeightVersion, C.GetWeightVersionRequest()),
    ]:
        yield f"weights: {name}", b.call(method, request)


def shutdown_battery(port, pb, model):
    b = Battery(port, pb)
    yield "Shutdown (external engine)", b.call(b.ctl.Shutdown, b.C.ShutdownRequest())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--serve", required=True)
    p.add_argument("--mock-engine", required=True)
    p.add_argument("--vllm-rs", default=os.path.join(cc.REF, "vllm_src/vllm/vllm-rs"))
    p.add_argument("--model", default=os.path.join(cc.REF, "models/qwen3"))
    p.add_argument("--real-engine", action="store_true",
                   help="in front of vLLM's own EngineCoreProc (scripted executor) instead of "
                        "the mock: the main battery and shutdown only")
    p.add_argument("--engine-max-model-len", type=int, default=512,
                   help="--max-model-len of the real engine: the scripted executor never "
                        "samples EOS, so 'Generate to EOS' runs to this length (20 ms a token)")
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="grpc-conformance-")
    pb = stubs(workdir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    parsers = ["--reasoning-parser", "none", "--tool-call-parser", "none"]
    kv_config = json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                            "endpoint": "tcp://*:5599", "topic": "kv"})
    phases = [
        (parsers, battery, cc.LORA_MOCK_FLAGS, {**cc.LORA_ENV, "VLLM_SERVER_DEV_MODE": "1"}),
        (parsers + ["--api-key", "sekret"], events_battery, ["--kv-events-config", kv_config], {}),
        (parsers, weights_battery, ["--weight-transfer-config", json.dumps({"backend": "nccl"})],
         {"VLLM_SERVER_DEV_MODE": "1"}),
        (parsers, shutdown_battery, (), {}),
    ]
    if args.real_engine:
        phases = [(parsers, battery, (), {"VLLM_SERVER_DEV_MODE": "1"}),
                  (parsers, shutdown_battery, (), {})]
    theirs, ours = [], []
    for flags, calls, mock_extra, extra_env in phases:
        phase_env = {**env, **extra_env}
        answers = []
        for name, starter in [("vllm-rs", cc.start_vllm_rs), ("serve", cc.start_serve)]:
            port = cc.free_port()
            answer = cc.run(name, starter, args, workdir, phase_env, flags + ["--grpc-port", str(port)],
                            lambda base, model, port=port: calls(port, pb, model), mock_extra)
            if answer is None:
                return 1
            answers.append(answer)
        theirs += answers[0]
        ours += answers[1]
    return cc.report("gRPC conformance", theirs, ours, KNOWN_DIFFERENCES, workdir)


if __name__ == "__main__":
    sys.exit(main())
