"""Item 9: models TinkerService.train's loop at e2a406a48 (tinker/service.py#L136-L180), one
packed row per trajectory, optim_step_async inside the row loop, with a stand-in client.
ARTBOT_FIX=1: forward_backward over the rows, then one step.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
LR, TRAJECTORIES = 1e-3, 4


class TrainingClient:
    def __init__(self) -> None:
        self.w = torch.zeros(8, requires_grad=True)
        self.opt = torch.optim.Adam([self.w], lr=LR)
        self.steps = 0

    def forward_backward(self, row: torch.Tensor) -> None:
        (self.w * row).sum().backward()  # its gradient is `row`

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
common = torch.randn(8, generator=g)  # one ART step's trajectories share a direction
rows = [common + 0.3 * torch.randn(8, generator=g) for _ in range(TRAJECTORIES)]
client = TrainingClient()
train(client, rows)
moved = float(client.w.detach().abs().median()) / LR
print(f"one ART step, {TRAJECTORIES} trajectories in {len(rows)} rows: {client.steps} Adam step(s)")
print(f"the weights moved by a median {moved:.2f} x lr (one Adam step moves them about 1 x lr)")
print("verdict: " + ("reproduced" if client.steps > 1 else "fixed"))
