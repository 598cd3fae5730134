#!/usr/bin/env python3
"""Issue 57's check scripts on made-up inputs (no tpbench, no package, no committed tables):
published_tables' choice of engine and table per corpus entry and its table lookup, and
aiconfigurator_ops' op groups and aiconfigurator.py's checks of the committed points file.
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aiconfigurator  # noqa: E402  (this folder's script, not the package)
import aiconfigurator_ops as ops  # noqa: E402
import published_tables as pt  # noqa: E402

CURVE = {"bytes": [1024, 4096, 16384], "s": [1e-5, 2e-5, 6e-5]}


def row(eid, engine, predict, role="held-out", metric="allreduce_time_us", value=20.0,
        gpu="H100 SXM", **cond):
    return {"id": eid, "kind": "published", "role": role, "metric": metric, "value": value,
            "conditions": dict(cond, engine=engine, gpu=gpu, tp=predict.get("world", 1)),
            "predict": predict}


class PublishedTables(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        path = pt.tables_path(self.root, "vllm-0.24", "h100-sxm")
        os.makedirs(os.path.dirname(path))
        os.makedirs(os.path.join(self.root, "configs", "engines"))
        for eng in ("vllm-0.24.json",):  # trtllm-1.3 has tables below but no engine file
            open(os.path.join(self.root, "configs", "engines", eng), "w").close()
        trt = pt.tables_path(self.root, "trtllm-1.3", "h100-sxm")
        os.makedirs(os.path.dirname(trt))
        open(trt, "w").close()
        with open(path, "w") as f:
            json.dump({"collectives": {"all_reduce": {"custom_eager": {"4": CURVE},
                                                      "nccl": {"4": CURVE}}}}, f)

    def test_curve_exact_between_and_beyond(self):
        self.assertAlmostEqual(pt.curve_s(CURVE, 4096), 2e-5)
        self.assertAlmostEqual(pt.curve_s(CURVE, 10240), 4e-5)  # halfway from 4096 to 16384
        self.assertAlmostEqual(pt.curve_s(CURVE, 28672), 1e-4)  # the last two points' line

    def test_table_of_each_row(self):
        disp = row("a", "vLLM custom all-reduce kernel as its own dispatch picks it",
                   {"world": 4, "algo": "oneshot", "bytes": 4096, "eager": True})
        forced = row("b", "vLLM custom all-reduce, one-shot kernel (ca_1stage)",
                     {"world": 4, "algo": "oneshot", "bytes": 4096})
        ring = row("c", "NCCL all_reduce_perf, NCCL_ALGO=RING", {"world": 4, "algo": "ring",
                                                                  "bytes": 4096})
        self.assertEqual(pt.table_impl(disp), "custom_eager")
        self.assertIsNone(pt.table_impl(forced))
        self.assertIsNone(pt.table_impl(ring))
        judged = pt.judge_collectives(self.root, [disp, forced, ring], pt_load)
        self.assertEqual([(e["id"], round(err, 6)) for e, err, _ in judged], [("a", 0.0)])

    def test_engine_only_where_tables_exist_roles_kept(self):
        vllm = row("v", "vLLM PyNcclCommunicator (NCCL)", {"world": 4, "algo": "nccl",
                                                           "bytes": 4096})
        trt = row("t", "TensorRT-LLM v0.5", {"hardware": "h100-sxm", "engine": "trtllm-mmha"},
                  metric="ttft_ms", model="llama-2-7b")
        self.assertEqual(pt.engine_of(self.root, vllm), "vllm-0.24")
        self.assertIsNone(pt.engine_of(self.root, trt))  # tables, but no trtllm-1.3 engine
        out, priced = pt.with_tables(self.root, [vllm, trt], collectives_ok=True)
        self.assertEqual(priced, {"v": "vllm-0.24"})
        self.assertEqual([e["role"] for e in out], ["held-out", "held-out"])
        self.assertEqual(out[1]["predict"]["engine"], "trtllm-mmha")
        self.assertNotIn("engine", vllm["predict"])  # a copy was re-priced, not the corpus
        _, priced = pt.with_tables(self.root, [vllm], collectives_ok=False)
        self.assertEqual(priced, {})  # a collectives verb without --engine keeps today's


def pt_load(path):
    with open(path) as f:
        return json.load(f)


class AIConfiguratorOps(unittest.TestCase):
    def test_both_sides_group_alike(self):
        pairs = [("generation_add_norm_1", "rmsnorm_attn"), ("generation_ar_1", "allreduce_attn"),
                 ("context_qkv_gemm", "qkv_proj"), ("generation_attention", "rope"),
                 ("generation_proj_gemm", "o_proj"), ("generation_gate_ffn1_gemm", "gate_up_proj"),
                 ("generation_act_gate", "swiglu"), ("generation_ffn2_gemm", "down_proj"),
                 ("generation_logits_gemm", "sample")]
        for aic, tpb in pairs:
            self.assertEqual(ops.group(aic), ops.group(tpb), (aic, tpb))
        self.assertEqual(ops.group("residual_mlp"), "norm")
        self.assertEqual(ops.group("mystery_op"), "mystery_op")

    def test_points_file_checks(self):
        good = {"id": "p", "aic": {"ms": 2.0, "command": "aiconfigurator cli estimate",
                                   "ops_ms": {"generation_ar_1": 1.0, "generation_qkv_gemm": 1.0}}}
        ent = {"packages": {"aiconfigurator": "0.12.0"}, "points": [good]}
        self.assertEqual(aiconfigurator.check_doc({"engines": {"e": ent}}, "e"), [])
        good["aic"]["ops_ms"]["generation_qkv_gemm"] = 1.5  # the ops no longer sum to ms
        self.assertEqual(len(aiconfigurator.check_doc({"engines": {"e": ent}}, "e")), 1)
        good["aic"]["ops_ms"] = {"generation_newop": 2.0}  # an op no group takes
        self.assertIn("no op group", aiconfigurator.check_doc({"engines": {"e": ent}}, "e")[0])
        ent["cli_check"] = {"cli_tpot_ms": 2.5, "sdk_tpot_ms": 2.4}
        self.assertTrue(any("cli_check" in b for b in
                            aiconfigurator.check_doc({"engines": {"e": ent}}, "e")))

    def test_tables_from_the_points_database(self):
        root = tempfile.mkdtemp()
        path = os.path.join(root, "configs", "engine_tables", "sglang-0.5", "h100-sxm.json")
        os.makedirs(os.path.dirname(path))
        prov = {"framework": "sglang", "version": "0.5.14", "system": "h100_sxm"}
        with open(path, "w") as f:
            json.dump({"provenance": prov}, f)
        saved, aiconfigurator.ROOT = aiconfigurator.ROOT, root
        try:
            self.assertEqual(aiconfigurator.check_tables("sglang-0.5"), [])
            prov["version"] = "0.5.6.post2"  # regenerated from another database
            with open(path, "w") as f:
                json.dump({"provenance": prov}, f)
            self.assertEqual(len(aiconfigurator.check_tables("sglang-0.5")), 1)
        finally:
            aiconfigurator.ROOT = saved


if __name__ == "__main__":
    unittest.main()
