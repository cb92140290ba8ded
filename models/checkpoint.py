"""Load BERT/ERNIE checkpoints from a local directory into our `Encoder`, and save/load our own format.

Layouts understood by `load_pretrained(dir)`:
- PaddleNLP: `model_state.pdparams` (read by `load_paddle_pickle`, never `paddle.load`) or
  `model_state.safetensors` + `config.json` (or old `model_config.json`) + `vocab.txt`
- Hugging Face: `model.safetensors` or `pytorch_model.bin` + `config.json` + `vocab.txt`

`pytorch_model.bin` is read WITHOUT torch: it is a zip holding `data.pkl` (a pickle whose tensors are
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)` calls) and one raw file per
storage. `_TorchUnpickler` allows only those few globals and rebuilds numpy arrays; anything else in
the pickle is refused, so a hostile file cannot run code. `save_torch_bin` writes the same format
(tests use it; it also lets a user hand our weights to torch users).

Paddle's `.pdparams`/`.pdopt`/`.pdstate` files are pickles too, and `paddle.load` unpickles them with
no restriction: a crafted file runs any command on load. `load_paddle_pickle` reads them instead with
`_PaddleUnpickler`, which allows only the globals a plain state dict needs (numpy's array and scalar
reconstruction, `tuple` for Paddle 2.1's (name, array) pairs, OrderedDict; GeneratorState for an RNG
state file) and refuses everything else with `UnsafePickleError` before anything is called;
`paddle_pickle_problem` says the same from the file's opcodes alone, without building anything (for
listings). `PADDLE_SAFETENSORS` (`model_state.safetensors`) is a Paddle-layout state dict in a format
that holds only tensors: our model directories use it, and `read_weights` reads it as such.

Our own model directory (an encoder with its extraction head, ready to extract) is models/model_dir.py's:
this module only reads the checkpoints training starts from.

Training checkpoints (`CheckpointSlots`): the newest two, each written to a temporary directory,
fsynced and renamed into place, so a save killed half way never replaces a good checkpoint, and a
resume whose newest checkpoint is torn falls back to the older one.

Nothing here touches the network; names of hub models are refused with a hint.
"""
from __future__ import annotations

import codecs
import io
import json
import os
import pickle
import re
import shutil
import sys
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np
import paddle

from data.atomic import fsync_path
from models.encoder import Encoder, EncoderConfig

# ---------------------------------------------------------------------------------------------
# config.json -> EncoderConfig
# ---------------------------------------------------------------------------------------------
_CONFIG_KEYS = {  # our field: names used by HF / PaddleNLP config files
    "vocab_size": ("vocab_size",),
    "hidden_size": ("hidden_size",),
    "num_layers": ("num_hidden_layers",),
    "num_heads": ("num_attention_heads",),
    "intermediate_size": ("intermediate_size",),
    "max_position": ("max_position_embeddings",),
    "type_vocab_size": ("type_vocab_size",),
    "dropout": ("hidden_dropout_prob",),
    "attention_dropout": ("attention_probs_dropout_prob",),
    "layer_norm_eps": ("layer_norm_eps",),
    "activation": ("hidden_act",),
    "pad_token_id": ("pad_token_id",),
    "use_task_id": ("use_task_id",),
    "task_type_vocab_size": ("task_type_vocab_size",),
    "task_id": ("task_id",),
}


def read_config(model_dir: str | Path) -> EncoderConfig:
    """EncoderConfig from a checkpoint's `config.json` (HF / PaddleNLP) or `model_config.json`."""
    model_dir = Path(model_dir)
    for name in ("config.json", "model_config.json"):
        path = model_dir / name
        if path.is_file():
            raw = json.loads(path.read_text(encoding="utf-8"))
            break
    else:
        raise FileNotFoundError(f"no config.json or model_config.json in {model_dir}; copy the "
                                "checkpoint's config file next to its weights")
    if "init_args" in raw:       # PaddleNLP <= 2.4 model_config.json: {"init_args": [{...}], ...}
        raw = raw["init_args"][0] if raw["init_args"] else {}
        raw = raw.get("init_args", [raw])[0] if "init_args" in raw else raw
    kw = {}
    for ours, theirs in _CONFIG_KEYS.items():
        for key in theirs:
            if key in raw:
                kw[ours] = raw[key]
    if kw.get("activation") not in (None, "gelu", "gelu_new", "gelu_pytorch_tanh", "relu"):
        raise ValueError(f"{model_dir}: hidden_act {kw['activation']!r} is not supported; "
                         "use a BERT/ERNIE checkpoint with gelu or relu")
    kw["vocab_size"] = int(kw.get("vocab_size", 0)) or _vocab_lines(model_dir)
    return EncoderConfig(**kw)


def _vocab_lines(model_dir: Path) -> int:
    path = model_dir / "vocab.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{model_dir} has neither vocab_size in its config nor vocab.txt")
    return len(path.read_text(encoding="utf-8").splitlines())


# ---------------------------------------------------------------------------------------------
# reading weight files
# ---------------------------------------------------------------------------------------------
_TORCH_DTYPES: dict[str, type[np.generic] | str] = {      # str: a dtype numpy lacks
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16", "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name: str):
        self.name = name


def _rebuild_tensor(storage: np.ndarray, offset: int, size, stride, *_ignored) -> np.ndarray:
    if not size:
        return storage[offset].copy()
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=tuple(size),
                                           strides=tuple(s * item for s in stride))
    return np.array(view)


def _rebuild_parameter(data, *_ignored):
    return data


class _TorchUnpickler(pickle.Unpickler):
    """Unpickles torch's data.pkl into numpy arrays; refuses every global it does not know."""

    _ALLOWED = {
        ("collections", "OrderedDict"): OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    }

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str):
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix = archive, prefix

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _TORCH_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"pytorch_model.bin refers to {module}.{name}, which a plain "
                                     "weight file never needs; refusing to load it (convert the "
                                     "checkpoint to model.safetensors instead)")

    def persistent_load(self, pid):
        kind, storage_type, key, _location, _numel = pid
        if kind != "storage" or not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r} in pytorch_model.bin")
        raw = self.archive.read(f"{self.prefix}data/{key}")
        dtype = _TORCH_DTYPES[storage_type.name]
        if dtype == "bfloat16":   # numpy has no bfloat16: widen the 16 bits into float32's top half
            return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))


def read_torch_bin(path: str | Path) -> dict[str, np.ndarray]:
    """{name: numpy array} from a torch >= 1.6 `pytorch_model.bin` (zip format), without torch."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is a legacy (pre-zip) torch file; re-save it with torch >= 1.6 or "
                         "convert it to model.safetensors, then load again")
    with zipfile.ZipFile(path) as archive:
        pkl = [n for n in archive.namelist() if n.endswith("data.pkl")]
        if len(pkl) != 1:
            raise ValueError(f"{path} holds {len(pkl)} data.pkl entries; expected exactly one")
        prefix = pkl[0][: -len("data.pkl")]
        state = _TorchUnpickler(archive.read(pkl[0]), archive, prefix).load()
    if not isinstance(state, dict):
        raise ValueError(f"{path} does not hold a state dict (found {type(state).__name__})")
    return {k: v for k, v in state.items() if isinstance(v, np.ndarray)}


# --- Paddle pickles, read without running code ------------------------------------------------

PADDLE_SAFETENSORS = "model_state.safetensors"    # Paddle-layout weights (ours, or a converted PaddleNLP one)


class UnsafePickleError(pickle.UnpicklingError):
    """A Paddle pickle that refers to something a plain weight/optimizer/RNG file never needs."""


def _numpy_global(name: str):
    try:                                            # numpy >= 2, else numpy 1.x
        from numpy._core import multiarray
    except ImportError:                             # pragma: no cover
        from numpy.core import multiarray  # type: ignore[no-redef]
    return getattr(multiarray, name)


# (module, name) -> the object it stands for; both numpy module spellings (files written under numpy 1 and 2)
def _numpy_maker(name: str) -> Callable[[], object]:
    return lambda: _numpy_global(name)


_PADDLE_ALLOWED: dict[tuple[str, str], Callable[[], object]] = {
    **{(mod, fn): _numpy_maker(fn)
       for mod in ("numpy.core.multiarray", "numpy._core.multiarray") for fn in ("_reconstruct", "scalar")},
    ("numpy", "ndarray"): lambda: np.ndarray,
    ("numpy", "dtype"): lambda: np.dtype,
    ("builtins", "tuple"): lambda: tuple,           # paddle 2.1 saved a tensor as tuple((name, array))
    ("__builtin__", "tuple"): lambda: tuple,
    ("collections", "OrderedDict"): lambda: OrderedDict,
    ("_codecs", "encode"): lambda: codecs.encode,     # protocol 2's spelling of a bytes object
}
_RNG_ALLOWED = {("paddle.base.libpaddle", "GeneratorState"), ("paddle.fluid.libpaddle", "GeneratorState"),
                ("paddle.fluid.core_avx", "GeneratorState"), ("paddle.fluid.core_noavx", "GeneratorState")}


def _refusal(path: Path | str, module: str, name: str) -> str:
    return (f"{path} refers to {module}.{name}, which a plain Paddle weight file never needs (a pickle can "
            f"run code when loaded); refusing to load it. Use weights from a source you trust, or re-export "
            f"them as {PADDLE_SAFETENSORS}")


class _PaddleUnpickler(pickle.Unpickler):
    """Unpickles a Paddle state dict (numpy arrays, numbers, strings, containers); refuses every other global."""

    def __init__(self, fh, path: Path | str, rng: bool = False):
        super().__init__(fh, encoding="latin1")
        self.path, self.rng = path, rng

    def find_class(self, module: str, name: str):
        make = _PADDLE_ALLOWED.get((module, name))
        if make is not None:
            return make()
        if self.rng and (module, name) in _RNG_ALLOWED:
            from paddle.base.libpaddle import GeneratorState
            return GeneratorState
        raise UnsafePickleError(_refusal(self.path, module, name))

    def persistent_load(self, pid):
        raise UnsafePickleError(f"{self.path} holds a persistent reference ({pid!r:.60}), which a Paddle weight "
                                "file never does; refusing to load it")


def _untuple(obj: Any, to_tensor: bool) -> Any:
    """Paddle's post-load conversion (paddle.framework.io._parse_load_result): (name, array) pairs and
    arrays become arrays (or tensors); containers are walked; object arrays are refused."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray):
        obj = obj[1]
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise UnsafePickleError("an array of Python objects is not a weight; refusing to load it")
        return paddle.to_tensor(obj) if to_tensor else obj
    if isinstance(obj, dict):
        return type(obj)((k, _untuple(v, to_tensor)) for k, v in obj.items())
    if isinstance(obj, list):
        return [_untuple(v, to_tensor) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_untuple(v, to_tensor) for v in obj)
    return obj


def load_paddle_pickle(path: str | Path, return_numpy: bool = False, rng: bool = False) -> Any:
    """What `paddle.load(path, return_numpy=...)` returns for a pickled state dict, optimizer state (or,
    `rng=True`, an RNG state list), read through `_PaddleUnpickler`: UnsafePickleError for a file that
    refers to anything else, nothing of it called. Big parameters split by protocol-2 saves are joined."""
    with open(path, "rb") as fh:
        obj = _PaddleUnpickler(fh, path, rng).load()
    if isinstance(obj, dict):
        if "UnpackBigParamInfor@@" in obj:
            from paddle.framework.io_utils import _pack_loaded_dict
            obj = _pack_loaded_dict(obj)             # pure dict surgery on the arrays already read
        obj.pop("StructuredToParameterName@@", None)
    return _untuple(obj, to_tensor=not return_numpy)


_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
               "SHORT_BINSTRING"}
_NO_STACK_OPS = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "FRAME", "PROTO"}
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}


def paddle_pickle_problem(path: str | Path, rng: bool = False) -> str | None:
    """Why `load_paddle_pickle` would refuse `path`, read from its opcodes without building anything (cheap
    enough for a listing), or None. A global whose name the scan cannot pin down is refused too; a torn or
    non-pickle file is not this check's business (None: the load reports it)."""
    import pickletools
    allowed = set(_PADDLE_ALLOWED) | (_RNG_ALLOWED if rng else set())
    pushed: list[Any] = []                         # what each stack-changing opcode left on top (str or None)
    memo: dict[int, Any] = {}
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        for op, arg, _pos in pickletools.genops(data):
            name = op.name
            if name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                if (module, attr) not in allowed:
                    return _refusal(path, module, attr)
                pushed.append(None)
            elif name == "STACK_GLOBAL":
                top = pushed[-2:]
                if len(top) != 2 or not all(isinstance(t, str) for t in top):
                    return f"{path} names a global the check cannot read; refusing to load it"
                if (top[0], top[1]) not in allowed:
                    return _refusal(path, top[0], top[1])
                pushed.append(None)
            elif name in ("PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4"):
                return f"{path} uses the pickle opcode {name}, which a Paddle weight file never does; refusing it"
            elif name in _STRING_OPS:
                pushed.append(arg)
            elif name == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(str(arg))] = pushed[-1] if pushed else None
            elif name in _GET_OPS:
                pushed.append(memo.get(int(str(arg))))
            elif name not in _NO_STACK_OPS:
                pushed.append(None)
    except (OSError, ValueError, pickle.UnpicklingError):
        return None
    return None


class _Global:
    """A stand-in for a torch global (function or storage class) when writing without torch."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle insists a reduce function is callable; it is never called
        raise RuntimeError(f"{self.module}.{self.name} is a placeholder for writing torch files")


class _TensorRecord:
    def __init__(self, storage_key: str, array: np.ndarray):
        self.key, self.array = storage_key, array


_NP_TO_STORAGE = {np.dtype(v): k for k, v in _TORCH_DTYPES.items() if not isinstance(v, str)}


class _StorageRef:
    def __init__(self, record: _TensorRecord):
        self.record = record


class _TorchPickler(pickle._Pickler):
    """Writes tensors the way torch.save does, using the pure-Python pickler so that torch's globals
    can be emitted by name without torch being importable."""

    def reducer_override(self, obj):
        if isinstance(obj, _Global):
            return obj.name                      # -> self.save_global(obj, name) below
        if isinstance(obj, _TensorRecord):
            a = obj.array
            stride = tuple(s // a.itemsize for s in a.strides)
            return (_Global("torch._utils", "_rebuild_tensor_v2"),
                    (_StorageRef(obj), 0, tuple(a.shape), stride, False, OrderedDict()))
        return NotImplemented

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):         # torch's ('storage', type, key, location, numel)
            a = obj.record.array
            return ("storage", _Global("torch", _NP_TO_STORAGE[a.dtype]), obj.record.key, "cpu", a.size)
        return None

    def save_global(self, obj, name=None):
        if isinstance(obj, _Global):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))
            self.memoize(obj)
            return
        super().save_global(obj, name)


def save_torch_bin(state: dict[str, np.ndarray], path: str | Path) -> None:
    """Write {name: array} as a torch zip checkpoint that `torch.load` and `read_torch_bin` accept."""
    path = Path(path)
    records = OrderedDict()
    for i, (name, array) in enumerate(state.items()):
        array = np.ascontiguousarray(array)
        if array.dtype not in _NP_TO_STORAGE:
            raise TypeError(f"{name}: dtype {array.dtype} has no torch storage type")
        records[name] = _TensorRecord(str(i), array)
    buf = io.BytesIO()
    _TorchPickler(buf, protocol=2).dump(records)
    root = path.stem
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{root}/data.pkl", buf.getvalue())
        z.writestr(f"{root}/byteorder", "little")
        for rec in records.values():
            z.writestr(f"{root}/data/{rec.key}", rec.array.astype(rec.array.dtype.newbyteorder("<")).tobytes())
        z.writestr(f"{root}/version", "3\n")


def read_weights(model_dir: str | Path) -> tuple[dict[str, np.ndarray], str]:
    """({name: array}, layout) where layout is 'paddle' or 'hf' (HF Linear weights are [out, in])."""
    model_dir = Path(model_dir)
    own = model_dir / PADDLE_SAFETENSORS
    if own.is_file():
        from safetensors.numpy import load_file
        return load_file(str(own)), "paddle"
    pd_file = model_dir / "model_state.pdparams"
    if pd_file.is_file():
        state = load_paddle_pickle(pd_file, return_numpy=True)      # never paddle.load: a pickle runs code
        if not isinstance(state, dict):
            raise ValueError(f"{pd_file} does not hold a state dict (found {type(state).__name__})")
        return {k: np.asarray(v) for k, v in state.items() if isinstance(v, np.ndarray)}, "paddle"
    st_file = model_dir / "model.safetensors"
    if st_file.is_file():
        from safetensors.numpy import load_file
        return load_file(str(st_file)), "hf"
    bin_file = model_dir / "pytorch_model.bin"
    if bin_file.is_file():
        return read_torch_bin(bin_file), "hf"
    raise FileNotFoundError(f"no weights in {model_dir}: expected {PADDLE_SAFETENSORS} or model_state.pdparams "
                            "(PaddleNLP), model.safetensors or pytorch_model.bin (Hugging Face). Sharded "
                            "checkpoints are not supported; merge the shards first.")


# ---------------------------------------------------------------------------------------------
# key mapping: checkpoint names -> our Encoder's names
# ---------------------------------------------------------------------------------------------
_EMBED = {
    "embeddings.word_embeddings.weight": "embeddings.word_embeddings.weight",
    "embeddings.position_embeddings.weight": "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight": "embeddings.token_type_embeddings.weight",
    "embeddings.task_type_embeddings.weight": "embeddings.task_type_embeddings.weight",
    "embeddings.layer_norm.weight": "embeddings.layer_norm.weight",
    "embeddings.layer_norm.bias": "embeddings.layer_norm.bias",
    "embeddings.LayerNorm.weight": "embeddings.layer_norm.weight",
    "embeddings.LayerNorm.bias": "embeddings.layer_norm.bias",
    "embeddings.LayerNorm.gamma": "embeddings.layer_norm.weight",   # original Google BERT ports
    "embeddings.LayerNorm.beta": "embeddings.layer_norm.bias",
}
_PADDLE_LAYER = {  # PaddleNLP's nn.TransformerEncoderLayer names are the same as ours
    "self_attn.q_proj": "q_proj", "self_attn.k_proj": "k_proj", "self_attn.v_proj": "v_proj",
    "self_attn.out_proj": "out_proj", "norm1": "norm1", "norm2": "norm2",
    "linear1": "linear1", "linear2": "linear2",
}
_HF_LAYER = {
    "attention.self.query": "q_proj", "attention.self.key": "k_proj", "attention.self.value": "v_proj",
    "attention.output.dense": "out_proj", "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "linear1", "output.dense": "linear2", "output.LayerNorm": "norm2",
}
_PARAM = {"weight": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}
_LAYER_RE = re.compile(r"^encoder\.(layers|layer)\.(\d+)\.(.+)\.(weight|bias|gamma|beta)$")
# not part of a token encoder: the pooler, a buffer, and task/pre-training heads (which live beside
# the base model under a prefix, or at top level when the checkpoint has no prefix)
_IGNORED_IN_BASE = ("pooler.", "embeddings.position_ids", "cls.", "classifier.", "qa_outputs.", "lm_head.")


def map_state(state: dict[str, np.ndarray], layout: str) -> tuple[dict[str, np.ndarray], list[str], list[str]]:
    """Rename a BERT/ERNIE state dict to our names; returns (mapped, ignored notes, unknown keys).

    The base-model prefix (`bert.`, `ernie.`, anything, or none) is found from the word-embedding key.
    Keys outside the base model (cls.*, classifier.*) and the pooler are ignored with a note; keys
    inside it that we do not recognise are returned as unknown so the caller can fail loudly.
    """
    anchors = [k for k in state if k.endswith("embeddings.word_embeddings.weight")]
    if len(anchors) != 1:
        raise KeyError(f"cannot find exactly one '*embeddings.word_embeddings.weight' key (found "
                       f"{anchors}); is this a BERT/ERNIE checkpoint? Keys start: {sorted(state)[:8]}")
    prefix = anchors[0][: -len("embeddings.word_embeddings.weight")]
    mapped, ignored, unknown = {}, [], []
    for key, value in state.items():
        if not key.startswith(prefix):
            ignored.append(key)
            continue
        name = key[len(prefix):]
        if name.startswith(_IGNORED_IN_BASE):
            ignored.append(key)
            continue
        if name in _EMBED:
            mapped[_EMBED[name]] = value
            continue
        m = _LAYER_RE.match(name)
        table = _PADDLE_LAYER if m and m.group(1) == "layers" else _HF_LAYER
        if not m or m.group(3) not in table:
            unknown.append(key)
            continue
        ours = f"layers.{m.group(2)}.{table[m.group(3)]}.{_PARAM[m.group(4)]}"
        if layout == "hf" and m.group(4) == "weight" and value.ndim == 2:
            value = value.T                       # torch Linear is [out, in]; Paddle's is [in, out]
        mapped[ours] = value
    return mapped, ignored, unknown


def _optional_missing(name: str) -> bool:
    """Parameters a text checkpoint cannot have: layout tables (start at zero) and our head."""
    return (name.startswith("head.")
            or any(name.startswith(f"embeddings.{t}_embeddings.") for t in "xywh"))


def load_state_into(model: Encoder, mapped: dict[str, np.ndarray], source: str = "checkpoint") -> None:
    """Copy mapped weights into `model`; any missing, extra or mis-shaped key is an error listing all."""
    ours = model.state_dict()
    missing = [k for k in ours if k not in mapped and not _optional_missing(k)]
    extra = [k for k in mapped if k not in ours]
    bad = [f"{k}: checkpoint {list(v.shape)} vs model {list(ours[k].shape)}"
           for k, v in mapped.items() if k in ours and list(v.shape) != list(ours[k].shape)]
    problems = []
    if missing:
        problems.append(f"missing from {source} ({len(missing)}): {missing}")
    if extra:
        problems.append(f"in {source} but not in the model ({len(extra)}): {extra}")
    if bad:
        problems.append(f"shape mismatch ({len(bad)}): {bad}")
    if problems:
        raise KeyError("checkpoint does not fit the encoder config; nothing was loaded.\n  "
                       + "\n  ".join(problems)
                       + "\nCheck that config.json belongs to these weights.")
    for k, v in mapped.items():
        ours[k].set_value(paddle.to_tensor(np.ascontiguousarray(v), dtype=ours[k].dtype))


def load_pretrained(model_dir: str | Path, head: paddle.nn.Layer | None = None,
                    **config_overrides) -> tuple[Encoder, list[str]]:
    """Build an Encoder from a local PaddleNLP or Hugging Face BERT/ERNIE directory.

    Returns (model, notes): notes name the checkpoint keys that were deliberately ignored (pooler,
    pre-training heads). `config_overrides` (e.g. dropout=0.0) replace values read from config.json.
    """
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"{model_dir} is not a local directory. Models are never downloaded "
                                "at run time: download the checkpoint once and pass its folder.")
    config = read_config(model_dir)
    for k, v in config_overrides.items():
        setattr(config, k, v)
    state, layout = read_weights(model_dir)
    mapped, ignored, unknown = map_state(state, layout)
    if unknown:
        raise KeyError(f"{model_dir}: unexpected encoder keys {unknown}; this is not a plain "
                       "BERT/ERNIE encoder (or needs a new mapping in models/checkpoint.py)")
    model = Encoder(config, head=head)
    load_state_into(model, mapped, source=str(model_dir))
    notes = [f"ignored {len(ignored)} non-encoder keys: {ignored}"] if ignored else []
    return model, notes


# ---------------------------------------------------------------------------------------------
# training checkpoints: two slots, each written whole before it counts
# ---------------------------------------------------------------------------------------------
CKPT_KEEP = 2                     # the newest and the one before it: a torn newest still leaves one
CKPT_MANIFEST = "manifest.json"   # written last in a slot: every file's size, so truncation is caught
_SLOT = re.compile(r"^step_(\d+)$")
T = TypeVar("T")


class CheckpointError(ValueError):
    """No checkpoint in a directory could be read (each one's reason is in the message)."""


class CheckpointSlots:
    """Training checkpoints under `root`: root/step_00000200/, root/step_00000400/ (the newest `keep`).

    A save writes into root/.tmp_step_N/ (`begin` + the caller's files + `commit`): every file is
    fsynced, a manifest of file sizes is written last, and only then is the directory renamed to
    step_N, after which the oldest slots beyond `keep` are deleted. A killed save leaves a .tmp_ folder
    that nothing reads and the next save of that step clears. `resume` tries the slots newest first.
    A checkpoint written before slots existed (files directly in `root`) is read as the oldest slot.

    Under one process per pipeline stage, the lead calls `begin` and `commit`, every process writes
    its own files into `staging(step)` in between (with barriers around, as the trainer does).
    """

    def __init__(self, root: str | Path, keep: int = CKPT_KEEP):
        self.root = Path(root)
        self.keep = max(1, int(keep))

    def staging(self, step: int) -> Path:
        return self.root / f".tmp_step_{int(step):08d}"

    def slot(self, step: int) -> Path:
        return self.root / f"step_{int(step):08d}"

    def begin(self, step: int) -> Path:
        """An empty staging directory for the checkpoint of `step` (a killed save's leftovers removed)."""
        tmp = self.staging(step)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        return tmp

    def commit(self, step: int) -> Path:
        """fsync the staged files, write the manifest, rename the staging directory into place, prune."""
        tmp = self.staging(step)
        files = {f.name: f.stat().st_size for f in sorted(tmp.iterdir()) if f.is_file()}
        for name in files:
            fsync_path(tmp / name)
        with open(tmp / CKPT_MANIFEST, "w", encoding="utf-8") as fh:
            json.dump({"step": int(step), "files": files}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_path(tmp)
        final = self.slot(step)
        if final.exists():                # the same step saved again (a time budget stop right after a save)
            shutil.rmtree(final)
        os.replace(tmp, final)
        fsync_path(self.root)
        for old in self.slots()[self.keep:]:
            if old != self.root:
                shutil.rmtree(old, ignore_errors=True)
        return final

    def save(self, step: int, write: Callable[[Path], None]) -> Path:
        """One-process save: `write(directory)` puts the checkpoint's files there; returns the slot."""
        write(self.begin(step))
        return self.commit(step)

    def slots(self) -> list[Path]:
        """Committed checkpoints, newest first (a pre-slot checkpoint in `root` itself last)."""
        found = []
        if self.root.is_dir():
            for d in self.root.iterdir():
                m = _SLOT.match(d.name)
                if m and d.is_dir():
                    found.append((int(m.group(1)), d))
        out = [d for _, d in sorted(found, reverse=True)]
        if (self.root / "state.json").is_file():
            out.append(self.root)
        return out

    def verify(self, slot: Path) -> None:
        """Raise CheckpointError unless every file the manifest lists is there at its full size."""
        if slot == self.root:             # a pre-slot checkpoint has no manifest: its loader decides
            return
        try:
            manifest = json.loads((slot / CKPT_MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{CKPT_MANIFEST} unreadable ({exc})") from exc
        for name, size in manifest.get("files", {}).items():
            f = slot / name
            if not f.is_file():
                raise CheckpointError(f"{name} is missing")
            if f.stat().st_size != size:
                raise CheckpointError(f"{name} is {f.stat().st_size} bytes, {size} were written (torn)")

    def resume(self, load: Callable[[Path], T], log: Callable[[str], None] | None = None) -> tuple[Path, T] | None:
        """(slot, load(slot)) for the newest slot that verifies and loads; None when there is none.

        A slot that fails (torn file, unreadable weights) is reported through `log` (default: stderr)
        and the next older one is tried. Raises CheckpointError when slots exist but none loads, rather
        than silently starting over (which would then overwrite them)."""
        say = log or (lambda msg: print(msg, file=sys.stderr))
        failed: list[str] = []
        for slot in self.slots():
            try:
                self.verify(slot)
                result = load(slot)
            except Exception as exc:      # whatever a torn file raises (EOFError, UnpicklingError, ...)
                failed.append(f"{slot.name}: {exc}")
                say(f"checkpoint {slot} is unreadable ({exc}); trying the older one")
                continue
            if failed:
                say(f"resuming from the older checkpoint {slot} (the newer one could not be read)")
            return slot, result
        if failed:
            raise CheckpointError(f"no readable checkpoint in {self.root}: " + "; ".join(failed)
                                  + "; delete the directory to start over")
        return None
