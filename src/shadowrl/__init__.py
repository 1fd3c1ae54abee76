"""shadowrl: train agentic coding models with RL inside the harness they are served in.

Start with `shadowrl.agent.loop` (the one loop serve, train and eval share), then
`shadowrl.rl.orchestrator` (the asynchronous RL dataflow). Nothing is imported
here on purpose: `import shadowrl` stays instant and side-effect free.
"""

__version__ = "0.1.0"
