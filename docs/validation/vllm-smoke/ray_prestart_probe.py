"""Can a Ray worker started ahead (its imports done) host verl's actors? A probe on Ray 2.60.

verl starts its job with a runtime_env of its own (env_vars, ray.init in main_ppo) and each
worker-group actor with another (WORLD_SIZE, RANK, MASTER_ADDR/PORT ... as env_vars; the vLLM
server and the agent-loop workers likewise). Ray keys its idle workers by the runtime_env's hash:
this probe starts idle workers for the job, then places (a) an actor with no runtime_env of its
own and (b) an actor with its own env_vars, and prints whether each got one of the idle workers.

usage: python3 ray_prestart_probe.py   (CPU only; prints one line per case)
"""

from __future__ import annotations

import os
import time

import ray


@ray.remote(num_cpus=0)
def pid() -> int:
    time.sleep(0.5)
    return os.getpid()


@ray.remote(num_cpus=0)
class Probe:
    def pid(self) -> int:
        return os.getpid()


def main() -> None:
    ray.init(address="local", num_cpus=4, include_dashboard=False, runtime_env={"env_vars": {"JOB_LEVEL": "1"}})
    idle = set(ray.get([pid.remote() for _ in range(4)]))  # four workers, now idle with the job's env
    time.sleep(3)  # they are back in the idle pool
    plain = ray.get(Probe.remote().pid.remote())
    own = ray.get(Probe.options(runtime_env={"env_vars": {"RANK": "0", "MASTER_PORT": "29500"}}).remote().pid.remote())
    print(f"idle workers of the job: {sorted(idle)}")
    print(f"actor with the job's runtime_env: pid {plain}, {'an idle worker' if plain in idle else 'a NEW worker'}")
    print(f"actor with its own env_vars (as verl's): pid {own}, {'an idle worker' if own in idle else 'a NEW worker'}")
    ray.shutdown()


if __name__ == "__main__":
    main()
