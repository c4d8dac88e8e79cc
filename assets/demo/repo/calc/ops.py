"""Arithmetic on two numbers, and the average of many."""


def add(a, b):
    return a + b


def mean(values):
    """The average of a non-empty list."""
    count = len(values)
    total = 0
    for value in values:
        total = total + value
    return total / count


def divide(a, b):
    return a / b
