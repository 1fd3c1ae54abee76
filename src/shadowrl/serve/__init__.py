"""Production surfaces: the OpenAI-compatible server, its schemas and the remote policy.

What users talk to runs the same prompt rendering and tool-call parsing as training
(`shadowrl.agent`), in front of the batched engine (`shadowrl.inference`). Nothing here
is imported by `rl` or `eval`: to them a served model is one more `Policy`.
"""
