import argparse
import os
import numpy as np
import paddle
import paddlecloud

p = argparse.ArgumentParser(description="Evaluates a line fitted by fit-a-line on fresh synthetic data.")
p.add_argument("--samples", type=int, default=1000)
a = p.parse_args()
source = paddlecloud.model_dir()
params = os.path.join(source, "line.pdparams")
if not os.path.exists(params):
    raise SystemExit(f"The model version has no line.pdparams: evaluate one that fit-a-line registered ({sorted(os.listdir(source))}).")
line = paddle.nn.Linear(2, 1)
line.set_state_dict(paddle.load(params))
line.eval()
rng = np.random.default_rng(1)
x = rng.uniform(-1, 1, (a.samples, 2)).astype("float32")
y = (x @ np.array([[2.0], [-3.4]], dtype="float32") + 4.2).astype("float32")
with paddle.no_grad():
    error = line(paddle.to_tensor(x)).numpy() - y
mse, mae = float(np.mean(error ** 2)), float(np.mean(np.abs(error)))
from visualdl import LogWriter
writer = LogWriter(logdir="vdl")
writer.add_scalar("eval/mse", mse, 1)
writer.add_scalar("eval/mae", mae, 1)
writer.close()
print(f"evaluated on {a.samples} samples: mse {mse:.6f} mae {mae:.6f}", flush=True)
