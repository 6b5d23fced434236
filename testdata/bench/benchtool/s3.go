package main

// The bucket section of 'make bench': what a site would otherwise do with
// the same S3 server, with the AWS SDK's own tools at their defaults.

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/bundle/bundletest"
)

// s3Tool runs one S3 operation against endpoint with the AWS chain's
// credentials (the environment): "mkbucket" creates bucket; "upload"
// uploads file to bucket/key with the SDK's upload manager at its default
// settings (5 MiB parts, 5 at a time) and prints the seconds it took.
func s3Tool(t *bundletest.Standalone, op, endpoint, bucket, key, file string) {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
	switch op {
	case "mkbucket":
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
			t.Fatalf("creating bucket %s: %v", bucket, err)
		}
	case "upload":
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		start := time.Now()
		if _, err := manager.NewUploader(c).Upload(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: f}); err != nil {
			t.Fatalf("uploading %s: %v", file, err)
		}
		fmt.Printf("%.3f\n", time.Since(start).Seconds())
	default:
		t.Fatalf("s3: unknown -op %q", op)
	}
}
