"""Models the cited loop, not ART's code; ART's TinkerService.train is run by `artbot verify`.
That check: check_art in repros/item09_tinker_masks.py (from the wheel's source, with a
stand-in Tinker client).

Item 9, as a question: on the legacy Tinker path, is one Adam step per trajectory intended?

ART at e2a406a48, src/art/tinker/service.py#L136-L180 (ART's own: TinkerService.train), roughly:
    for i in range(packed_tensors["tokens"].shape[0]):  # one packed row per iteration
        ... await training_client.forward_backward_custom_async(data=[...], loss_fn=...)
        ... await training_client.optim_step_async(adam_params=...)  # inside the row loop
The Tinker path packs with pack_results=False (openpipe-art 0.5.23 local/backend.py L338, passed
at L1114), so each trajectory gets its own row (pack.py L410-L422). This models that loop with
a stand-in training client, so it runs without ART or Tinker, and counts the steps.
ARTBOT_FIX=1 applies the audit's suggestion: forward_backward over the rows, then one step.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
LR, TRAJECTORIES = 1e-3, 4


class TrainingClient:
    """Stand-in for tinker's: forward_backward accumulates gradients, optim_step applies them."""

    def __init__(self) -> None:
        self.w = torch.zeros(8, requires_grad=True)
        self.opt = torch.optim.Adam([self.w], lr=LR)
        self.steps = 0

    def forward_backward(self, row: torch.Tensor) -> None:
        (self.w * row).sum().backward()  # a row's loss; its gradient is `row`

    def optim_step(self) -> None:
        self.opt.step()
        self.opt.zero_grad()
        self.steps += 1


def train(client: TrainingClient, rows: list[torch.Tensor]) -> None:
    for row in rows:
        client.forward_backward(row)
        if not FIX:
            client.optim_step()  # service.py: optim_step_async awaited once per packed row
    if FIX:
        client.optim_step()  # the audit's suggestion: once per ART step


g = torch.Generator().manual_seed(0)
common = torch.randn(8, generator=g)  # the trajectories of one ART step share a direction
rows = [common + 0.3 * torch.randn(8, generator=g) for _ in range(TRAJECTORIES)]  # one row each
client = TrainingClient()
train(client, rows)
moved = float(client.w.detach().abs().median()) / LR
print(f"one ART step, {TRAJECTORIES} trajectories in {len(rows)} rows: {client.steps} Adam step(s)")
print(f"the weights moved by a median {moved:.2f} x lr (one Adam step moves them about 1 x lr)")
print("verdict: " + ("reproduced" if client.steps > 1 else "fixed"))
