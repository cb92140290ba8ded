"""`python -m training train` runs through the pipeline engine: the exact-mean loss equals the model's
loss on a full batch and does not depend on the micro-batching; training with 1 stage, 4 stages
(1F1B, GPipe) in one process and 4 gloo processes gives the same losses; the CLI rejects bad
combinations with a message that says what to change."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

ROOT = Path(__file__).resolve().parents[1]


def tiny_cfg(corpus: Path, stages: int, mbs: int, schedule: str = "1f1b", transport: str = "inprocess") -> dict:
    return {"seed": 3, "data": {"corpus": str(corpus), "heldout_layouts": 0.25, "real_ocr_pages": 0},
            "model": {"max_len": 48, "encoder": {"num_layers": 2, "hidden_size": 32, "num_heads": 2,
                                                 "intermediate_size": 64}},
            "train": {"steps": 3, "batch_size": 8, "lr": 0.003, "warmup": 1, "checkpoint_every": 100},
            "noise": {"confuse": 0.0, "drop": 0.0, "extra": 0.0},
            "pipeline": {"stages": stages, "micro_batches": mbs, "schedule": schedule, "transport": transport}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from data.corpus import corpus_from_synth_dir, write_corpus
    d = tmp_path_factory.mktemp("corpus")
    subprocess.run([sys.executable, "-m", "data.synth", "--type", "receipt", "--n", "6", "--seed", "2",
                    "--degrade", "none", "--out", str(d / "syn")], check=True, capture_output=True, cwd=ROOT)
    write_corpus(corpus_from_synth_dir(d / "syn"), d / "all")
    return d / "all"


def without_dropout() -> None:
    """Every Dropout of the built model off (the head's too, which the config cannot reach): the order
    in which stages draw dropout masks differs by schedule and process, the maths must not."""
    from models.extractor import ExtractorConfig
    build = ExtractorConfig.build
    if getattr(build, "no_dropout", False):
        return

    def quiet_build(self):
        model = build(self)
        for layer in model.sublayers():
            if isinstance(layer, paddle.nn.Dropout):
                layer.p = 0.0
        return model
    quiet_build.no_dropout = True
    ExtractorConfig.build = quiet_build


@pytest.fixture(autouse=True)
def _no_dropout(monkeypatch):
    from models.extractor import ExtractorConfig
    monkeypatch.setattr(ExtractorConfig, "build", ExtractorConfig.build)   # restored after each test
    without_dropout()


def newest_state(ckpt: Path) -> dict:
    """state.json of the newest checkpoint slot (work/checkpoint/step_N/)."""
    from models.checkpoint import CheckpointSlots
    return json.loads((CheckpointSlots(ckpt).slots()[0] / "state.json").read_text())


def run_losses(cfg: dict, where: Path) -> list[float]:
    from training.trainer import train
    train(cfg, where / "model", where / "work")
    return newest_state(where / "work" / "checkpoint")["losses"]


def test_exact_mean_loss_equals_the_model_loss_and_ignores_micro_batching():
    from models.heads import loss_fn
    from training.step import extractor_batch, extractor_loss
    rng = np.random.default_rng(0)
    b, t, k, d = 8, 6, 5, 3
    tags = rng.integers(0, k, (b, t))
    tags[rng.random((b, t)) < 0.4] = -100          # rows with very different numbers of labelled tokens
    tags[2] = -100
    doc = rng.integers(0, d, b)
    doc[[1, 5]] = -100
    links = (rng.random((b, t, t)) < 0.2).astype("float32")
    link_mask = (rng.random((b, t, t)) < 0.5).astype("float32")
    inputs = {"input_ids": np.zeros((b, t), "int64"), "bbox": np.zeros((b, t, 4), "int64"),
              "attention_mask": np.ones((b, t), "int64")}
    _, labels = extractor_batch(inputs, {"tags": tags, "doc_type": doc, "links": links, "link_mask": link_mask})
    outs = tuple(paddle.to_tensor(rng.normal(size=s).astype("float32")) for s in ((b, t, k), (b, d), (b, t, t)))
    want = float(loss_fn(outs, tuple(labels[:4])))
    assert float(extractor_loss(outs, labels)) == pytest.approx(want, rel=1e-6)
    for m in (2, 4, 8):                             # what the engine does: mean of M micro-batch losses / M
        size = b // m
        parts = [float(extractor_loss(tuple(o[i * size:(i + 1) * size] for o in outs),
                                      tuple(x[i * size:(i + 1) * size] for x in labels))) for i in range(m)]
        assert sum(parts) / m == pytest.approx(want, rel=1e-5), m
        # the old per-micro-batch mean would not have been exact
        naive = sum(float(loss_fn(tuple(o[i * size:(i + 1) * size] for o in outs),
                                  tuple(x[i * size:(i + 1) * size] for x in labels[:4]))) for i in range(m)) / m
        assert abs(naive - want) > 1e-3


@pytest.mark.heavy
def test_one_stage_and_four_stages_train_to_the_same_losses(corpus, tmp_path):
    ref = run_losses(tiny_cfg(corpus, 1, 1), tmp_path / "s1")
    assert len(ref) == 3 and ref[0] > ref[-1] > 0
    for stages, mbs, schedule in ((4, 8, "1f1b"), (4, 4, "gpipe"), (1, 8, "1f1b")):
        got = run_losses(tiny_cfg(corpus, stages, mbs, schedule), tmp_path / f"s{stages}_{mbs}_{schedule}")
        np.testing.assert_allclose(got, ref, rtol=2e-4, err_msg=f"{stages} stages x {mbs} {schedule}")
    prov = json.loads((tmp_path / "s4_8_1f1b" / "model" / "provenance.json").read_text())
    assert "4 stages x 8 micro-batches, 1f1b" in prov["step_function"]
    from models.extractor import Extractor
    Extractor.load(tmp_path / "s4_8_1f1b" / "model")      # the merged 4-stage model loads for inference


def _dist_worker(cfg: dict, where: str) -> None:
    from training.trainer import train
    without_dropout()
    train(cfg, Path(where) / "model", Path(where) / "work")


@pytest.mark.heavy
def test_four_gloo_processes_match_in_process(corpus, tmp_path):
    import paddle.distributed as dist
    ref = run_losses(tiny_cfg(corpus, 4, 8, "1f1b"), tmp_path / "inproc")
    dist.spawn(_dist_worker, args=(tiny_cfg(corpus, 4, 8, "1f1b", "dist"), str(tmp_path / "dist")),
               nprocs=4, backend="gloo")
    got = newest_state(tmp_path / "dist" / "work" / "checkpoint")["losses"]
    np.testing.assert_allclose(got, ref, rtol=2e-4)
    # the lead gathered every stage's weights: the written model equals the in-process one
    from safetensors.numpy import load_file
    a = load_file(str(tmp_path / "inproc" / "model" / "model_state.safetensors"))
    b = load_file(str(tmp_path / "dist" / "model" / "model_state.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(b[k].astype("float32"), a[k].astype("float32"), rtol=2e-3, atol=2e-3, err_msg=k)


def test_cli_flags_and_clear_errors_for_bad_combinations(tmp_path, capsys, monkeypatch):
    from training.__main__ import main
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = capsys.readouterr().out
    for flag in ("--pipeline-stages", "--micro-batches", "--schedule", "--transport", "launch_train.py"):
        assert flag in help_text
    cases = [(("--micro-batches", "3"), "divisible by --micro-batches"),
             (("--pipeline-stages", "0"), "must be at least 1"),
             (("--pipeline-stages", "2", "--micro-batches", "3", "--schedule", "interleaved"), "multiple of"),
             (("--pipeline-stages", "4", "--micro-batches", "8", "--transport", "dist"), "paddle.distributed.launch")]
    for args, message in cases:
        assert main(["train", "--out", str(tmp_path / "m"), *args]) == 2, args
        assert message in capsys.readouterr().err, args
        assert not (tmp_path / "m_work").exists()        # rejected before any data is generated
    # launched with 4 processes but asked to run in one: said so, not silently ignored
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "4")
    assert main(["train", "--out", str(tmp_path / "m"), "--transport", "inprocess"]) == 2
    assert "--transport dist" in capsys.readouterr().err


def test_more_stages_than_blocks_is_refused():
    from training.step import check_pipeline
    with pytest.raises(ValueError, match="cannot be cut into 5 stages"):
        check_pipeline({"stages": 5, "micro_batches": 1}, n_blocks=4)
    assert check_pipeline({"stages": 4, "micro_batches": 8, "schedule": "gpipe"}, 4, 8)["transport"] == "inprocess"


@pytest.mark.heavy
def test_resume_restores_stage_checkpoints_and_old_one_process_ones(corpus, tmp_path):
    from models.extractor import ExtractorConfig
    from training.trainer import train

    def weights(model_dir: Path) -> dict:
        from safetensors.numpy import load_file
        return {k: v.astype("float32") for k, v in load_file(str(model_dir / "model_state.safetensors")).items()}

    cfg = tiny_cfg(corpus, 4, 8, "1f1b")
    cfg["train"].update(steps=2, checkpoint_every=2)
    first = weights(train(cfg, tmp_path / "a", tmp_path / "work"))
    # resumed at its last step, with nothing left to do: the written model is the checkpoint's
    again = weights(train(cfg, tmp_path / "b", tmp_path / "work", resume=True))
    for k in first:
        np.testing.assert_array_equal(again[k], first[k], err_msg=k)
    cfg["train"]["steps"] = 3                               # and it trains on from there
    train(cfg, tmp_path / "c", tmp_path / "work", resume=True)
    state = newest_state(tmp_path / "work" / "checkpoint")
    assert state["resumed_at"] == [2] and len(state["losses"]) == 3

    # a checkpoint from before the engine and before slots (model.pdparams + opt.pdopt of one AdamW,
    # directly in work/checkpoint/) resumes one stage
    ckpt = tmp_path / "work" / "checkpoint"
    for slot in ckpt.glob("step_*"):
        shutil.rmtree(slot)
    xcfg = ExtractorConfig.load(tmp_path / "a")
    model = xcfg.build()
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in first.items()})
    paddle.save(model.state_dict(), str(ckpt / "model.pdparams"))
    paddle.save(paddle.optimizer.AdamW(parameters=model.parameters()).state_dict(), str(ckpt / "opt.pdopt"))
    for f in ckpt.glob("stage_*"):
        f.unlink()
    state.update(step=2, losses=state["losses"][:2], resumed_at=[])
    (ckpt / "state.json").write_text(json.dumps(state))
    cfg["train"]["steps"] = 2
    cfg["pipeline"].update(stages=1, micro_batches=1)
    legacy = weights(train(cfg, tmp_path / "d", tmp_path / "work", resume=True))
    for k in first:
        np.testing.assert_array_equal(legacy[k], first[k], err_msg=k)
