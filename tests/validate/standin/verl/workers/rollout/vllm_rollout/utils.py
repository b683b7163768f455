"""Stand-in of verl 0.9.1's ``vLLMColocateWorkerExtension`` with a vLLM-like model, torch-free.

The model holds its parameters as vLLM does for a dense model: q/k/v fused into ``qkv_proj`` and
gate/up into ``gate_up_proj`` along dim 0, the vocabulary padded to a multiple of 64 rows.
``update_weights_from_ipc`` loads one sync bucket by bucket through ``_update_weights``, as verl's
does. ``mode`` plants the faults of the sabotage suite: ``partial`` loads only the first half of
each bucket, ``some`` loads on odd syncs only, ``names`` swaps layer 0's and layer 1's names.
"""

import numpy as np


class _Model:
    # as vLLM's dense models declare it
    packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}  # noqa: RUF012

    def __init__(self, shapes):
        self.params = {}
        for name, shape in shapes.items():
            for fused, shards in self.packed_modules_mapping.items():
                if f".{shards[0]}." in name:
                    rows = sum(shapes[name.replace(f".{shards[0]}.", f".{s}.")][0] for s in shards)
                    self.params[name.replace(f".{shards[0]}.", f".{fused}.")] = np.zeros((rows, *shape[1:]), "float32")
            if not any(f".{s}." in name for shards in self.packed_modules_mapping.values() for s in shards):
                rows = -(-shape[0] // 64) * 64 if "embed_tokens" in name else shape[0]
                self.params[name] = np.zeros((rows, *shape[1:]), "float32")
        self.shapes = shapes

    def named_parameters(self, remove_duplicate=True):
        return iter(self.params.items())

    def load_weights(self, weights):
        for name, t in weights:
            for fused, shards in self.packed_modules_mapping.items():
                hit = next((i for i, s in enumerate(shards) if f".{s}." in name), None)
                if hit is not None:
                    off = sum(self.shapes[name.replace(f".{shards[hit]}.", f".{s}.")][0] for s in shards[:hit])
                    self.params[name.replace(f".{shards[hit]}.", f".{fused}.")][off : off + t.shape[0]] = t
                    break
            else:
                if name in self.params:
                    self.params[name][: t.shape[0]] = t


class _Runner:
    def __init__(self, shapes):
        self.model = _Model(shapes)


class vLLMColocateWorkerExtension:
    def __init__(self, shapes, mode="healthy"):
        self.model_runner = _Runner(shapes)
        self.mode = mode
        self.syncs = 0

    def update_weights_from_ipc(self, weights, bucket=3):
        self.syncs += 1
        for i in range(0, len(weights), bucket):
            self._update_weights(weights[i : i + bucket], None, False)

    def _update_weights(self, weights, peft_config, base_sync_done):
        if self.mode == "partial":
            weights = weights[: len(weights) // 2]
        elif self.mode == "some" and self.syncs % 2 == 0:
            return
        elif self.mode == "names":
            swap = {".layers.0.": ".layers.1.", ".layers.1.": ".layers.0."}
            weights = [(next((n.replace(a, b) for a, b in swap.items() if a in n), n), t) for n, t in weights]
        self.model_runner.model.load_weights(weights)
