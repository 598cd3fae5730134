// `tpbench serve`'s own options (ServeSpec reads them, serve_spec.cc), vLLM's `vllm bench
// serve` spellings among them. serve also takes the point options but kNotServe.
#pragma once
#include "harness/config/options/point_options.h"

namespace tpb::opt {

// clang-format off
inline constexpr OptionDef concurrency{"concurrency", T::list, "8",
    "closed loop: requests in flight; a list (1,2,4 or 1..64:x2) sweeps it", 0, 0, "", "", "",
    "N|LIST"};
inline constexpr OptionDef rate{"rate", T::list, "",
    "open loop: requests/s (Poisson, or gamma with --burstiness); a list sweeps it", 0, 0, "",
    "", "closed loop at --concurrency", "R|LIST"};
inline constexpr OptionDef burstiness{"burstiness", T::number, "1",
    "gamma shape of the arrival gaps (1 = Poisson, as vLLM)", 1e-3, 1e3};
inline constexpr OptionDef requests{"requests", T::integer, "64", "measured requests per point",
    1, 1 << 20};
inline constexpr OptionDef warmup_requests{"warmup_requests", T::integer, "0",
    "requests run first and left out of the metrics", 0, 1 << 20};
inline constexpr OptionDef prompt_len{"prompt_len", T::text, "128",
    "prompt tokens per request: N | uniform:A..B | normal:MEAN,SD | mix:64@0.9,1024@0.1", 0, 0,
    "", "", "", "DIST"};
inline constexpr OptionDef output_len{"output_len", T::text, "128",
    "output tokens per request, as --prompt-len", 0, 0, "", "", "", "DIST"};
inline constexpr OptionDef trace{"trace", T::text, "",
    "JSONL requests (arrival_s, prompt_len, output_len), instead of the above", 0, 0, "", "",
    "none", "FILE"};
inline constexpr OptionDef scheduler{"scheduler", T::choice, "continuous",
    "continuous (iteration-level, Orca) or static (a batch runs to its longest)", 0, 0, "",
    "continuous|static"};
inline constexpr OptionDef chunk{"chunk", T::integer, "",
    "chunked prefill: token budget per step (Sarathi-Serve's stall-free order)", 0, 1 << 20, "",
    "", "off: whole prompts"};
inline constexpr OptionDef max_batch{"max_batch", T::integer, "", "sequences per step", 1,
    1 << 16, "", "", "the concurrency, or 64 open loop"};
inline constexpr OptionDef max_step_tokens{"max_step_tokens", T::integer, "",
    "without --chunk: tokens per step at most, prompts whole", 1, 1 << 22, "", "", "8192"};
inline constexpr OptionDef kv_budget{"kv_budget", T::integer, "",
    "KV cache capacity in tokens", 1, 1099511627776.0, "", "",
    "what the memory budget leaves"};
inline constexpr OptionDef block_tokens{"block_tokens", T::integer, "16",
    "KV cache block size in tokens (paged cache)", 1, 1 << 16};
inline constexpr OptionDef host_overhead{"host_overhead", T::time, "0",
    "host work per step (tokenisation, sampling logic, ...): 2ms, 500us", 0, 1e7, "us"};
inline constexpr OptionDef serve_lm_head = variant_of(lm_head, "true",
    "end each step with the final norm, the vocab-parallel LM head and greedy sampling");
inline constexpr OptionDef slo{"slo", T::text, "",
    "goodput SLOs: ttft=200ms,tpot=50ms,itl_p95=80ms,e2el=10s (bare numbers in ms); a request "
    "counts if it meets every one given", 0, 0, "", "", "none", "SLOS"};
inline constexpr OptionDef price{"price", T::text, "",
    "US dollars per GPU-hour of the point's GPU (its hardware profile's name): h200-sxm=3.5; "
    "gives each load's cost per million tokens", 0, 0, "", "",
    "the hardware profile's price_per_hour, else no cost", "GPU=USD[,...]"};
// vLLM's spellings, renamed to the keys above before the spec reads them (serve_spec.cc).
inline constexpr OptionDef max_concurrency{"max_concurrency", T::list, "",
    "vLLM's spelling of --concurrency", 0, 0, "", "", "--concurrency's", "N|LIST"};
inline constexpr OptionDef request_rate{"request_rate", T::list, "",
    "vLLM's spelling of --rate; inf: every request at once (a closed loop at "
    "--max-concurrency, or at the request count)", 0, 0, "", "", "--rate's", "R|inf"};
inline constexpr OptionDef num_prompts{"num_prompts", T::integer, "",
    "vLLM's spelling of --requests", 1, 1 << 20, "", "", "--requests' (64)", "N"};
inline constexpr OptionDef random_input_len{"random_input_len", T::integer, "",
    "vLLM's spelling of a fixed --prompt-len N", 1, 1 << 24, "", "", "--prompt-len's", "N"};
inline constexpr OptionDef random_output_len{"random_output_len", T::integer, "",
    "vLLM's spelling of a fixed --output-len N", 1, 1 << 24, "", "", "--output-len's", "N"};
inline constexpr OptionDef result_dir{"result_dir", T::text, "",
    "with --save-result: the folder of vLLM's result files", 0, 0, "", "", "--out", "DIR"};
inline constexpr OptionDef result_filename{"result_filename", T::text, "",
    "with --save-result: the file name (several loads add -point-K)", 0, 0, "", "",
    "vLLM's pattern", "NAME"};
// clang-format on

inline constexpr const OptionDef* kServeOptions[] = {
    &concurrency,       &rate,         &burstiness,      &requests,
    &warmup_requests,   &prompt_len,   &output_len,      &trace,
    &scheduler,         &chunk,        &max_batch,       &max_step_tokens,
    &kv_budget,         &block_tokens, &host_overhead,   &slo,
    &max_concurrency,   &request_rate, &num_prompts,     &random_input_len,
    &random_output_len, &result_dir,   &result_filename, &price};

// Point options a serving run decides itself (serve_spec.cc says what to use instead).
inline constexpr const char* kNotServe[] = {"phase", "batch", "context", "prompt", "steps"};

}  // namespace tpb::opt
