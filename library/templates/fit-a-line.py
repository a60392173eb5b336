import argparse
import numpy as np
import paddle
import paddle.distributed as dist

p = argparse.ArgumentParser(description="Fits y = 2*x1 - 3.4*x2 + 4.2 with data-parallel trainers.")
p.add_argument("--epochs", type=int, default=20)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--register", default="", help="Register the fitted line as a new version of this model.")
a = p.parse_args()
world = dist.get_world_size()
if world > 1:
    dist.init_parallel_env()
rank = dist.get_rank()
rng = np.random.default_rng(0)
x = rng.uniform(-1, 1, (1024, 2)).astype("float32")
y = (x @ np.array([[2.0], [-3.4]], dtype="float32") + 4.2 + rng.normal(0, 0.01, (1024, 1))).astype("float32")
x, y = x[rank::world], y[rank::world]
paddle.seed(0)
model = paddle.nn.Linear(2, 1)
if world > 1:
    model = paddle.DataParallel(model)
opt = paddle.optimizer.SGD(learning_rate=a.lr, parameters=model.parameters())
writer = None
if rank == 0:
    from visualdl import LogWriter
    writer = LogWriter(logdir="vdl")
step = 0
for epoch in range(a.epochs):
    for i in range(0, len(x), a.batch_size):
        xb, yb = paddle.to_tensor(x[i:i + a.batch_size]), paddle.to_tensor(y[i:i + a.batch_size])
        loss = paddle.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        opt.clear_grad()
        step += 1
    if writer:
        writer.add_scalar("train/loss", float(loss), step)
    print(f"trainer {rank}/{world} epoch {epoch + 1} loss {float(loss):.5f}", flush=True)
if writer:
    writer.close()
    w = model.parameters()
    print("weights", [round(float(v), 3) for v in w[0].numpy().ravel()], "bias", round(float(w[1].numpy()[0]), 3))
    if a.register:
        # The weights (for evaluate-a-line) and the exported program (for serving).
        line = model._layers if world > 1 else model
        paddle.save(line.state_dict(), "model/line.pdparams")
        line.eval()
        paddle.jit.save(line, "model/inference", input_spec=[paddle.static.InputSpec([None, 2], "float32", "x")])
        import paddlecloud
        v = paddlecloud.register_model(a.register, "model", description=f"fit-a-line: {a.epochs} epochs, lr {a.lr}, loss {float(loss):.5f}")
        print(f"registered {a.register} version {v['version']}", flush=True)
