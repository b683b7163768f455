"""Stand-in of verl 0.9.1's ``BucketedWeightSender``: the trainer's side of a weight sync.

verl streams ``(name, tensor)`` pairs to the engine over ZMQ/CUDA IPC; here they are gathered into
``self.sent`` for the stand-in trainer to hand to its engine actor. What matters to patchctl's
code hook (train/hook_weights.py) is the method it wraps: ``async_send_weights(weights)``.
"""


class BucketedWeightSender:
    def __init__(self, **kwargs):
        self.sent = []

    async def async_send_weights(self, weights):
        for name, weight in weights:
            self.sent.append((name, weight.copy()))
