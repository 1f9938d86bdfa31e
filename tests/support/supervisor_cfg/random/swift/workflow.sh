#!/bin/bash
exec emews supervisor "$@"
