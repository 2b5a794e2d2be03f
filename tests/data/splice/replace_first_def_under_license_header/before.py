#!/usr/bin/env python3
# Licensed under the Apache License, Version 2.0
def main():
    print("hello")
