"""`python -m tablequeue.pipeline ...` and `spark-submit pipeline/__main__.py ...`.

Absolute import: spark-submit runs this file as a script, outside its package.
"""

from tablequeue.pipeline.cli import pipeline

if __name__ == "__main__":
    pipeline(prog_name="tablequeue pipeline")
