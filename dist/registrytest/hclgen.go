package registrytest

import (
	"bytes"
	"strconv"
)

// IAMPolicyTF is generated Terraform of the densest real kind, about size
// bytes: an aws_iam_policy_document of statements of actions, ARNs and
// conditions, as policy generators write them (about one token per five
// bytes). Tests of the bounds on configuration files check that a file
// like it still parses.
func IAMPolicyTF(size int) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated: do not edit.\ndata \"aws_iam_policy_document\" \"generated\" {\n")
	for i := 0; b.Len() < size; i++ {
		n := strconv.Itoa(i)
		b.WriteString("  statement {\n    sid    = \"Statement" + n + "\"\n    effect = \"Allow\"\n    actions = [\n")
		for _, a := range []string{"s3:GetObject", "s3:PutObject", "s3:ListBucket", "kms:Decrypt", "kms:GenerateDataKey"} {
			b.WriteString("      \"" + a + "\",\n")
		}
		b.WriteString("    ]\n    resources = [\n")
		for j := range 4 {
			b.WriteString("      \"arn:aws:s3:::bucket-" + n + "-" + strconv.Itoa(j) + "/*\",\n")
		}
		b.WriteString("    ]\n    condition {\n      test     = \"StringEquals\"\n      variable = \"aws:PrincipalTag/team\"\n      values   = [\"team-" + n + "\"]\n    }\n  }\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// IAMPolicyJSON is a .tf.json of about size bytes: an aws_iam_policy
// resource with a generated policy document inline (about one token per
// ten bytes).
func IAMPolicyJSON(size int) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"resource\": {\n    \"aws_iam_policy\": {\n      \"generated\": {\n        \"name\": \"generated\",\n        \"policy\": {\n          \"Version\": \"2012-10-17\",\n          \"Statement\": [\n")
	for i := 0; b.Len() < size; i++ {
		n := strconv.Itoa(i)
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("            {\n              \"Sid\": \"Statement" + n + "\",\n              \"Effect\": \"Allow\",\n              \"Action\": [\"s3:GetObject\", \"s3:PutObject\", \"s3:ListBucket\", \"kms:Decrypt\"],\n              \"Resource\": [")
		for j := range 4 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("\"arn:aws:s3:::bucket-" + n + "-" + strconv.Itoa(j) + "/*\"")
		}
		b.WriteString("]\n            }")
	}
	b.WriteString("\n          ]\n        }\n      }\n    }\n  }\n}\n")
	return b.Bytes()
}
