#include "harness/drive/serve/serve_memory.h"

#include <algorithm>
#include <cmath>

#include "layers/cost_model.h"
#include "tp_model/mixed_check.h"

namespace tpb {

namespace {

int64_t longest_request(const std::vector<Request>& reqs) {
  int64_t m = 1;
  for (const Request& r : reqs) m = std::max(m, r.prompt_len + r.output_len);
  return m;
}

// serve --check's peak (mixed_check.h): its sharded model of the check's own small serving
// layout and, beside it, the tp = 1 model of the same layout, at the point's depth.
double check_peak(const ServeSpec& spec, int64_t layers) {
  const RunSpec& r = spec.run;
  const ServeShape s = serve_shape_for(serve_check_script(), kServeCheckKv, spec.lm_head);
  return serve_memory_need(r.shape, r.tp, r.dtypes(), layers, s).total() +
         serve_memory_need(r.shape, 1, r.dtypes(), layers, s).total();
}

}  // namespace

ServeMemory plan_serve_memory(const ServeSpec& spec, const SchedulerConfig& sc,
                              const std::vector<Request>& reqs, double have, bool reference) {
  const RunSpec& r = spec.run;
  ServeMemory m;
  m.layers = r.planned_layers();
  m.shape.max_seqs = sc.max_running;
  // Rows of the largest step: the chunk (it counts the decodes too), or the token limit.
  m.shape.max_tokens = std::max(sc.chunk > 0 ? sc.chunk : sc.max_step_tokens, sc.max_running);
  m.shape.kv.block_tokens = sc.block_tokens;
  m.shape.lm_head = spec.lm_head;
  m.have = have;
  const double base = serve_memory_need(r.shape, r.tp, r.dtypes(), m.layers, m.shape).total();
  const double per_block = kv_bytes_per_token(r.shape, r.tp, r.dtypes(), m.layers) *
                           static_cast<double>(sc.block_tokens);
  const int64_t per_seq = (longest_request(reqs) + sc.block_tokens - 1) / sc.block_tokens;
  int64_t blocks = 0;
  if (spec.kv_budget_tokens > 0)
    blocks = (spec.kv_budget_tokens + sc.block_tokens - 1) / sc.block_tokens;
  else
    blocks = std::min<int64_t>(sc.max_running * per_seq,
                               static_cast<int64_t>(std::floor((m.have - base) / per_block)));
  m.shape.kv.num_blocks = std::max<int64_t>(blocks, 0);
  m.need = base + static_cast<double>(m.shape.kv.num_blocks) * per_block;
  m.fits = m.shape.kv.num_blocks >= 1 && m.need <= m.have;
  if (reference) {
    m.check = check_peak(spec, m.layers);
    m.check_blame = m.fits && m.check > m.have;
    m.fits = m.fits && m.check <= m.have;
  }
  return m;
}

}  // namespace tpb
