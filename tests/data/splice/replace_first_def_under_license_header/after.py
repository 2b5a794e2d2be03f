#!/usr/bin/env python3
# Licensed under the Apache License, Version 2.0
# Entry point.
def main():
    print("hello, world")
