# Arm an alarm whose default action ends the process mid-answer.
import signal


def f(x):
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    while True:
        pass
