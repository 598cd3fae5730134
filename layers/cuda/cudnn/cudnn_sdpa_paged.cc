// The paged graph of a mixed step: Q and O ragged over the rows (offsets per sequence), K and V
// read through block tables from the paged cache, the padding mask from the sequences' own
// lengths and the causal band aligned to each one's bottom right; as FlashInfer's cuDNN batch
// prefill builds it over a paged cache.
#include <string>
#include <unordered_map>
#include <vector>

#include "base/errors.h"
#include "layers/cuda/cudnn/cudnn_sdpa.h"
#include "layers/cuda/cudnn/cudnn_sdpa_impl.h"

namespace tpb {
namespace fe = cudnn_frontend;

namespace {

// The tensors' ids: the four of the dense graph, then the per-step arrays.
constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kSeqQ = 5, kSeqKv = 6, kRaggedQ = 7, kRaggedO = 8,
                  kTableK = 9, kTableV = 10;

std::vector<int64_t> paged_key(const SdpaPagedLayout& l, DType t) {
  std::vector<int64_t> k = {static_cast<int64_t>(t), l.batch, l.s_q, l.pages, l.block_tokens};
  for (const SdpaTensor* x : {&l.q, &l.k, &l.o}) append_key(k, *x);
  return k;
}

CudnnGraph build_paged_graph(const SdpaPagedLayout& l, DType t, cudnnHandle_t h) {
  CudnnGraph g = new_sdpa_graph(t);
  auto data = [&](const char* name, int64_t uid, const SdpaTensor& x) {
    return cudnn_tensor(*g, name, uid, x);
  };
  auto ints = [&](const char* name, int64_t uid, std::vector<int64_t> dim) {
    std::vector<int64_t> stride = {dim[1] * dim[2] * dim[3], dim[2] * dim[3], dim[3], 1};
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim(std::move(dim))
                         .set_stride(std::move(stride))
                         .set_data_type(fe::DataType_t::INT32));
  };
  auto q = data("Q", kQ, l.q), k = data("K", kK, l.k), v = data("V", kV, l.v);
  q->set_ragged_offset(ints("ragged_q", kRaggedQ, {l.batch + 1, 1, 1, 1}));
  auto opts = fe::graph::SDPA_attributes()
                  .set_name("sdpa_paged")
                  .set_generate_stats(false)
                  .set_attn_scale(l.scale)
                  .set_padding_mask(true)
                  .set_seq_len_q(ints("seq_len_q", kSeqQ, {l.batch, 1, 1, 1}))
                  .set_seq_len_kv(ints("seq_len_kv", kSeqKv, {l.batch, 1, 1, 1}))
                  .set_paged_attention_k_table(ints("table_k", kTableK, {l.batch, 1, l.pages, 1}))
                  .set_paged_attention_v_table(ints("table_v", kTableV, {l.batch, 1, l.pages, 1}))
                  .set_paged_attention_max_seq_len_kv(static_cast<int>(l.pages * l.block_tokens));
  // A decode-only step (one query per sequence, at its bottom) sees every position without a
  // mask; cuDNN's decode path (s_q 1) takes no band before 9.10.
  if (l.s_q > 1)
    opts.set_diagonal_alignment(fe::DiagonalAlignment_t::BOTTOM_RIGHT)
        .set_diagonal_band_right_bound(0);
  auto outs = g->sdpa(q, k, v, opts);
  cudnn_output(*outs[0], kO, l.o);
  outs[0]->set_ragged_offset(ints("ragged_o", kRaggedO, {l.batch + 1, 1, 1, 1}));
  cudnn_finish_graph(*g, h);
  return g;
}

}  // namespace

const fe::graph::Graph& CudnnSdpa::Impl::paged_graph(const SdpaPagedLayout& l, DType t) {
  cudnn_require_dtype(t);
  std::vector<int64_t> key = paged_key(l, t);
  if (auto r = paged_refusals.find(key); r != paged_refusals.end()) throw BackendError(r->second);
  try {
    return cached_graph(paged_graphs, key, built, [&] { return build_paged_graph(l, t, handle); });
  } catch (const BackendError& e) {
    paged_refusals.emplace(std::move(key), e.what());
    throw;
  }
}

PagedPadding CudnnSdpa::paged_padding() const {
  return paged_padding_for(static_cast<int64_t>(fe::detail::get_backend_version()));
}

int64_t CudnnSdpa::paged_workspace_bytes(const SdpaPagedLayout& l, DType t) {
  int64_t bytes = 0;
  cudnn_check(impl_->paged_graph(l, t).get_workspace_size(bytes), "get_workspace_size");
  return bytes;
}

void CudnnSdpa::run_paged(const SdpaPagedLayout& l, const SdpaPagedMeta& m, DType t,
                          const void* qkv, const void* k_cache, const void* v_cache, void* o,
                          const int32_t* meta, void* workspace) {
  auto at = [&](int64_t part) { return const_cast<int32_t*>(meta + part); };
  // The queries are qkv's first q_heads * head_dim columns: qkv itself, at each row.
  std::unordered_map<int64_t, void*> ptrs = {
      {kQ, const_cast<void*>(qkv)},     {kK, const_cast<void*>(k_cache)},
      {kV, const_cast<void*>(v_cache)}, {kO, o},
      {kSeqQ, at(m.seq_len_q)},         {kSeqKv, at(m.seq_len_kv)},
      {kRaggedQ, at(m.ragged_q)},       {kRaggedO, at(m.ragged_o)},
      {kTableK, at(m.table)},           {kTableV, at(m.table)}};
  cudnn_check(impl_->paged_graph(l, t).execute(impl_->handle, ptrs, workspace), "execute");
}

}  // namespace tpb
