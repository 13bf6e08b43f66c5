"""Follow-up 801, a fake fix (half a fix): the FP32 log-ratio bound tightened from 20 to 1. The
-9999 step's loss falls to 1.57, within twice the all-finite step's, but the sentinel's clamped
ratio is still its token's term, and that token gets no gradient (1/3 with every old logprob
finite); every legitimate ratio past e is clamped too. It fooled the check's loss-only rule
before the gradient was part of it. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [("loss.py", r"(log_ratio_bound = 10\.0 if .* else )20\.0$", r"\g<1>1.0")]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
