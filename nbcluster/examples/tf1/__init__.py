"""A corpus of TF1-shaped distributed programs (one process per task), run by
`python -m nbcluster.examples.run NAME`; each is a plain script whose only tie
to nbcluster is its `import nbcluster as tf` line."""
