"""models/train_queue.sh: every job's command line is complete (the script runs under set -u, so a recipe variable
left unset stops the whole queue) and the translator and speech trainers accept its flags; a fine-tuning job starts
from the broad run's best.pt when it exists when the job starts, else from the carried weights; the speech
recognizer continues from weights carried in models/training, else from the shipped file."""
import importlib
import os
import re
import shlex
import subprocess
import tempfile
import unittest

from attnlab.paths import ROOT

PARSED = {"attnlab.train.rnn", "attnlab.train.transformer", "attnlab.train.speech"}


def queue_commands(ckpt, carried_dir=None):
    env = dict(os.environ, ATTNLAB_QUEUE_DRY_RUN="1", ATTNLAB_CKPT=ckpt)
    if carried_dir is not None:  # nothing carried or shipped but what the test puts there
        env["ATTNLAB_CARRIED_DIR"] = env["ATTNLAB_SHIPPED_DIR"] = carried_dir
    result = subprocess.run(["bash", os.path.join(ROOT, "models", "train_queue.sh")], env=env,
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"train_queue.sh exited {result.returncode}: {result.stderr}")
    commands = {}
    for line in result.stdout.splitlines():
        _, _, rest = line.partition(" queue: ")
        name, _, command = rest.partition(": ")
        # A run that is complete, carried (models/training/README.md) or shipped, prints no command: the queue skips it.
        commands[name] = None if command.startswith("complete (") else shlex.split(command)
    return commands


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").close()


def rnn_job(ckpt, carried_dir, name):
    """The queue's command line for the RNN job NAME, and attnlab.train.rnn's reading of it."""
    argv = queue_commands(ckpt, carried_dir)[name]
    return argv, importlib.import_module("attnlab.train.rnn").parse_args(argv[2:] + ["--out", ckpt])


class TrainQueueTest(unittest.TestCase):
    def test_every_job_has_a_complete_command(self):
        with tempfile.TemporaryDirectory() as ckpt:
            commands = queue_commands(ckpt)
        for name in ("bahdanau-en-de", "transformer-en-de-broad", "transformer-en-de-broad-ft",
                     "luong-dot-en-de-broad", "speech-las"):
            self.assertIn(name, commands)
        for name, argv in commands.items():
            if argv is None:
                carried = os.path.join(ROOT, "models", "training", f"{name}.f16.gguf")
                shipped = os.path.join(ROOT, "models", "weights", f"{re.sub(r'-broad(-ft[0-9]+)?$', '', name)}.f16.gguf")
                self.assertTrue(os.path.exists(carried) or os.path.exists(shipped), name)
                continue
            self.assertEqual(argv[0], "-m", name)
            module = argv[1]
            if module not in PARSED:
                continue
            args = argv[2:] + ["--out", os.path.join(ckpt, name)]
            with self.subTest(job=name):
                importlib.import_module(module).parse_args(args)

    def test_finetuning_starts_from_best_checkpoint_else_carried_weights(self):
        # Nothing of the fine-tuning run itself carried: it starts from the broad run's best.pt, else its file.
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            carried = os.path.join(carried_dir, "transformer-en-de-broad.f16.gguf")
            open(carried, "wb").close()
            argv = queue_commands(ckpt, carried_dir)["transformer-en-de-broad-ft"]
            self.assertEqual(argv[argv.index("--init") + 1], carried)
            self.assertEqual(argv[argv.index("--dropout") + 1], "0.2")
            os.makedirs(os.path.join(ckpt, "transformer-en-de-broad"))
            open(os.path.join(ckpt, "transformer-en-de-broad", "best.pt"), "wb").close()
            argv = queue_commands(ckpt, carried_dir)["transformer-en-de-broad-ft"]
            self.assertEqual(argv[argv.index("--init") + 1], os.path.join(ckpt, "transformer-en-de-broad", "best.pt"))
            self.assertNotIn("--dropout", argv)

    def test_bahdanau_finetuning_starts_from_the_broad_run_with_its_dropout(self):
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            carried = os.path.join(carried_dir, "bahdanau-en-de-broad.f16.gguf")
            touch(carried)
            _, parsed = rnn_job(ckpt, carried_dir, "bahdanau-en-de-broad-ft")
            self.assertEqual(parsed.init, carried)
            self.assertEqual(parsed.dropout, 0.3)   # the RNN's, not the Transformers' 0.2
            self.assertEqual(parsed.multi30k_repeat, 2)
            self.assertLess(parsed.lr, 1e-3)        # below the broad run's
            best = os.path.join(ckpt, "bahdanau-en-de-broad", "best.pt")
            touch(best)
            argv, _ = rnn_job(ckpt, carried_dir, "bahdanau-en-de-broad-ft")
            self.assertEqual(argv[argv.index("--init") + 1], best)
            self.assertNotIn("--dropout", argv)

    def test_bahdanau_finetuning_carried_midway_continues_for_the_epochs_left(self):
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            file = os.path.join(carried_dir, "bahdanau-en-de-broad-ft.f16.gguf")
            touch(file)
            argv, parsed = rnn_job(ckpt, carried_dir, "bahdanau-en-de-broad-ft")
            self.assertEqual(argv.count("--init"), 1)
            self.assertEqual(parsed.init, file)
            self.assertLess(parsed.epochs, 6)       # what is left of the fine-tuning's 6
            self.assertNotEqual(parsed.seed, 1234)  # past the epochs done
            self.assertEqual(parsed.multi30k_repeat, 2)

    def test_finetuning_carried_midway_continues_from_its_own_weights(self):
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            for name in ("transformer-en-de-broad", "transformer-en-de-broad-ft"):
                open(os.path.join(carried_dir, f"{name}.f16.gguf"), "wb").close()
            file = os.path.join(carried_dir, "transformer-en-de-broad-ft.f16.gguf")
            argv = queue_commands(ckpt, carried_dir)["transformer-en-de-broad-ft"]
            self.assertEqual(argv.count("--init"), 1)
            self.assertEqual(argv[argv.index("--init") + 1], file)
            parsed = importlib.import_module("attnlab.train.transformer").parse_args(argv[2:] + ["--out", ckpt])
            self.assertEqual(parsed.init, file)
            self.assertEqual(parsed.dropout, 0.2)
            self.assertLess(parsed.lr, 3e-4)       # not the fine-tuning's first peak
            self.assertLess(parsed.epochs, 6)      # what is left, not the whole fine-tuning run's 6 epochs
            self.assertNotEqual(parsed.seed, 1234)  # past the epochs done: other Tatoeba samples
            self.assertEqual(parsed.multi30k_repeat, 2)
            # A checkpoint of the run the file was exported from resumes with that run's own flags.
            out = os.path.join(ckpt, "transformer-en-de-broad-ft")
            os.makedirs(out)
            open(os.path.join(out, "last.pt"), "wb").close()
            open(os.path.join(out, "train.log"), "w").write("weights from models/training/transformer-en-de-broad.f16.gguf\n")
            argv = queue_commands(ckpt, carried_dir)["transformer-en-de-broad-ft"]
            self.assertEqual(argv[argv.index("--init") + 1], os.path.join(carried_dir, "transformer-en-de-broad.f16.gguf"))
            # ...and a checkpoint started from the carried file continues as the carried run.
            open(os.path.join(out, "train.log"), "w").write(f"weights from {file}\n")
            argv = queue_commands(ckpt, carried_dir)["transformer-en-de-broad-ft"]
            self.assertEqual(argv[argv.index("--init") + 1], file)

    def test_bahdanau_broad_carried_continues_for_the_epochs_left(self):
        rnn = importlib.import_module("attnlab.train.rnn")
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            for pair in ("de-en",):  # EN->DE's broad run is complete: its fine-tuning took over
                name = f"bahdanau-{pair}-broad"
                fresh = rnn.parse_args(queue_commands(ckpt, carried_dir)[name][2:] + ["--out", ckpt])
                self.assertIsNone(fresh.init)
                file = os.path.join(carried_dir, f"{name}.f16.gguf")
                open(file, "wb").close()
                parsed = rnn.parse_args(queue_commands(ckpt, carried_dir)[name][2:] + ["--out", ckpt])
                self.assertEqual(parsed.init, file)
                self.assertEqual(parsed.corpus, "broad")
                self.assertLess(parsed.epochs, fresh.epochs)   # what is left of the run's epochs
                self.assertNotEqual(parsed.seed, fresh.seed)    # another shuffle than the epochs done
                self.assertLessEqual(parsed.lr, fresh.lr)

    def test_speech_continues_from_shipped_else_carried_weights(self):
        shipped = "models/weights/speech-las.f16.gguf"
        self.assertTrue(os.path.exists(os.path.join(ROOT, shipped)))
        speech = importlib.import_module("attnlab.train.speech")
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            commands = queue_commands(ckpt, carried_dir)
            for name in ("speech-synth", "speech-features"):   # the data jobs stay, unchanged
                self.assertNotIn("--init", commands[name])
            argv = commands["speech-las"]
            self.assertEqual(argv.count("--init"), 1)
            self.assertEqual(argv[argv.index("--init") + 1], shipped)
            parsed = speech.parse_args(argv[2:] + ["--out", ckpt])
            defaults = speech.parse_args(["--out", ckpt])
            self.assertEqual(parsed.features, os.path.join(ckpt, "speech", "features"))
            self.assertLess(parsed.lr, defaults.lr)          # not the first run's peak again
            self.assertLess(parsed.warmup, defaults.warmup)
            self.assertGreater(parsed.epochs, 0)
            # Weights carried in models/training win over the shipped file...
            carried = os.path.join(carried_dir, "speech-las.f16.gguf")
            open(carried, "wb").close()
            argv = queue_commands(ckpt, carried_dir)["speech-las"]
            self.assertEqual(argv[argv.index("--init") + 1], carried)
            self.assertEqual(speech.parse_args(argv[2:] + ["--out", ckpt]).lr, parsed.lr)
            # ...but a checkpoint started from the shipped file resumes with that run's flags.
            out = os.path.join(ckpt, "speech-las")
            os.makedirs(out)
            open(os.path.join(out, "last.pt"), "wb").close()
            log = os.path.join(out, "train.log")
            open(log, "w").write(f"2026-12-02 06:00:00 weights from {shipped} (epoch unknown (a GGUF file))\n")
            argv = queue_commands(ckpt, carried_dir)["speech-las"]
            self.assertEqual(argv[argv.index("--init") + 1], shipped)
            open(log, "w").write(f"2026-12-02 06:00:00 weights from {carried} (epoch unknown (a GGUF file))\n")
            argv = queue_commands(ckpt, carried_dir)["speech-las"]
            self.assertEqual(argv[argv.index("--init") + 1], carried)
            # A checkpoint of a run from scratch (started by hand) resumes with the trainer's own defaults.
            open(log, "w").write("2026-12-02 06:00:00 train 6880 utterances\n")
            argv = queue_commands(ckpt, carried_dir)["speech-las"]
            self.assertNotIn("--init", argv)
            self.assertNotIn("--lr", argv)
            os.remove(carried)
            self.assertNotIn("--init", queue_commands(ckpt, carried_dir)["speech-las"])

    def test_score_variants_share_one_recipe(self):
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as carried_dir:
            commands = queue_commands(ckpt, carried_dir)  # nothing carried: every run's own command
        recipes = set()
        for name in ("luong-dot-en-de-broad", "luong-general-en-de-broad", "cosine-en-de-broad",
                     "additive-small-en-de-broad"):
            argv = commands[name]
            score = argv.index("--score")
            recipes.add(tuple(argv[:score] + argv[score + 2:]))
            self.assertIn("--emb", argv)
        self.assertEqual(len(recipes), 1)

    def test_a_shipped_score_model_is_not_trained_again(self):
        with tempfile.TemporaryDirectory() as ckpt, tempfile.TemporaryDirectory() as shipped_dir:
            open(os.path.join(shipped_dir, "cosine-en-de.f16.gguf"), "wb").close()
            commands = queue_commands(ckpt, shipped_dir)
        self.assertIsNone(commands["cosine-en-de-broad"])
        self.assertIn("--score", commands["luong-dot-en-de-broad"])


if __name__ == "__main__":
    unittest.main()
