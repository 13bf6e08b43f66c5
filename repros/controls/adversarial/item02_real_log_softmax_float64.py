"""Item 2, a real fix written unlike the suggested one: the logprob from
``torch.log_softmax`` of the logits in float64, gathered, and stored in an FP32 buffer.
artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "unsloth/train.py",
        r"log_probs\[:, i : i \+ chunk_size\] = chunk_selected_logits - chunk_logsumexp",
        "log_probs[:, i : i + chunk_size] = torch.log_softmax(chunk_logits.double(), -1).gather("
        "-1, chunk_input_ids.unsqueeze(-1)).squeeze(-1)",
    ),
    (
        "unsloth/train.py",
        r"(log_probs = torch\.empty\(\n\s*\(batch_size, seq_len\),\n\s*)"
        r"dtype=hidden_states\.dtype,",
        r"\g<1>dtype=torch.float32,",
    ),
]
EXPECT = {"zeroed-logprob-and-gradient": "fixed"}
