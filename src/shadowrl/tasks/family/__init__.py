"""A family of small, real bug-fix tasks made for learning at this scale (issue 32).

Seeded, and bounded by its templates (each gives its renderings x sites x operators;
`shadowrl tasks family --part P --capacity` counts them): ordinary modules (parsing,
dates, text, money, units, small algorithms) from many templates, one bug injected by
`tasks/mutate.py`'s operators, a user-style report of one failing call, and hidden
tests on other inputs too, checked by `tasks/make.holds` and graded by the one grader.
Splits cannot leak: by template (train, dev, held-out templates), then by near-duplicate
group inside the train templates (held-out seeds). Read in this order:

    template.py   a template: parameterised source + a sampler of calls; expected = gold
    templates_*.py  the templates, as data
    catalog.py    all templates; which part each serves
    splits.py     parts by hash of template, then of (template, site, operator)
    generate.py   one instance: render, mutate, report, tests, check -> Instance
    report.py     the bug report
    mistakes.py   the report's call as a check, and a wrong first edit (the experts' demos)
    suite.py      fixed suites `family:<part>[@n][/t1,t2]` (cached) for `load_suite`
    stream.py     fresh instances for training, never one twice

The interface other code uses:

    suite.family_suite(SuiteName(part, n)) -> list[Task]   # or load_suite("family:dev")
    stream.FamilyStream(part, seed, python, log)            # next() -> Instance, never repeats
    generate.Instance: .task (a tasks.Task), .template, .site, .operator, .part, .bug_key
"""
