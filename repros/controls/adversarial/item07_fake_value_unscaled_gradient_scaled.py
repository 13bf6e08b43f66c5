"""Item 7, a fake fix on 0.5.20 that holds for the loss value only: without original_logprobs
the logged loss is no longer scaled, but the ratio still multiplies the gradient
(``loss * w - (loss * (w - 1)).detach()``: the value of ``loss``, the gradient of ``loss * w``).
A check that reads only the loss judges it fixed. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"\n(        )policy_loss \*= torch\.clamp\(prob_ratio, max=upper_bound\)\.detach\(\)\n",
        "\n\\g<1>_tis = torch.clamp(prob_ratio, max=upper_bound).detach()\n"
        "\\g<1>policy_loss = policy_loss * _tis - (policy_loss * (_tis - 1)).detach()\n",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "reproduced"}
