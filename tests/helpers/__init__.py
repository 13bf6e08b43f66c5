"""What the tests share that is not a fixture (fixtures live in conftest.py files): imported as
``tests.helpers.NAME``. No test module imports from another test module
(tests/project/test_suite_rules.py)."""
